// The model a person chose for a config that names none (the inline hint's "which model? — choose"):
// kept by the editor in the workspace's state, per file, never in the file (a DeepSpeed JSON stays
// plain JSON every loader reads), and sent to the language server, which estimates with it.
// The one typed message both sides use.

/** The command the hint runs: the editor's picker (presets, folders, Hugging Face ids). */
export const CHOOSE_MODEL_COMMAND = 'fsdp.chooseModel';

/** The editor tells the server every choice it keeps, at start and after each change. */
export const MODEL_CHOICES_NOTIFICATION = 'fsdp/modelChoices';

export interface ModelChoicesParams {
  /** The config's document URI, as the hint gave it (ChooseModelArgs.uri) → a preset id, a folder or a Hugging Face id. */
  choices: Record<string, string>;
}

/** What the hint passes to the picker: the config and what its wrap class says of the model. */
export interface ChooseModelArgs {
  uri: string;
  /** The family's preset ids first ("Llama": llama-2-7b, …), when the wrap class names one. */
  family?: { name: string; presets: string[] };
  why: string;
}
