// The one place a command line for a remote POSIX shell is made. ssh hands the remote side a
// single string that its login shell parses, so an argument vector cannot be passed as it is:
// every word is quoted here, and nowhere else, so a path or name with spaces, quotes, `;` or
// `$()` arrives as one literal word and nothing in it is executed.

/** Quotes one word for a POSIX shell: 'it'\''s' — single quotes keep everything literal. */
export function quoteWord(word: string): string {
  if (word.includes('\0')) throw new Error(`cannot pass a NUL byte to a remote command: ${JSON.stringify(word)}`);
  if (word !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * A remote path: like quoteWord, except that a leading `~/` becomes "$HOME"/ so the remote home
 * still applies (quoting would otherwise keep the tilde literal).
 */
export function quotePath(p: string): string {
  if (p === '~') return '"$HOME"';
  if (p.startsWith('~/')) return `"$HOME"/${quoteWord(p.slice(2))}`;
  return quoteWord(p);
}

/** A word of a remote command line: literal text, or a path subject to `~/` expansion. */
export type RemoteWord = string | { path: string } | { raw: string };

/**
 * Joins words into one remote command line. `{ raw }` words are shell syntax written in this
 * code base (`&&`, `>`, `2>&1`), never values from users or configs.
 */
export function commandLine(words: RemoteWord[]): string {
  return words.map((w) => (typeof w === 'string' ? quoteWord(w) : 'path' in w ? quotePath(w.path) : w.raw)).join(' ');
}

/**
 * Checks an SSH host alias before it reaches ssh: a name from ~/.ssh/config or the settings.
 * ssh substitutes the name into ProxyCommand and friends (run by a shell), and reads a leading
 * `-` as an option, so only the characters a host name, alias, user@host or [v6]:port use pass.
 */
export function checkHostAlias(alias: string): string | undefined {
  if (alias.length === 0) return 'the SSH host is empty';
  if (alias.startsWith('-'))
    return `SSH host ${JSON.stringify(alias)} starts with "-", which ssh would read as an option`;
  if (!/^[A-Za-z0-9._@:[\]-]+$/.test(alias)) {
    return `SSH host ${JSON.stringify(alias)} has characters a host alias cannot have (allowed: letters, digits and . _ - @ : [ ])`;
  }
  return undefined;
}
