// TensorBoard log folders under a folder on a machine: each folder holding event files is one run,
// as TensorBoard, the Hugging Face Trainer, Lightning and torchtitan lay them out.
import { EVENT_FILE_PREFIX } from './log-folder-follower';
import type { RunMachine } from '../machines/run-machine';

/** How deep below the folder event files are looked for (runs/<date>_<host>/, lightning_logs/version_N/, …). */
export const SEARCH_DEPTH = 5;

export async function tensorBoardFolders(machine: RunMachine, under: string): Promise<string[]> {
  const files = await machine.listFiles(under, EVENT_FILE_PREFIX, SEARCH_DEPTH);
  return [...new Set(files.map((f) => f.path.slice(0, f.path.lastIndexOf('/'))))].sort();
}
