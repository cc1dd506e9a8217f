// A host a config names only as a placeholder for the person to replace: the samples say so in
// their own comment ("gpu-box" is a placeholder for a Host alias in your ~/.ssh/config). "Check
// environment" reports such a host as not set up yet, not as a failure to reach it.

/** Whether `text` (a config, its comments included) calls `host` a placeholder. */
export function callsPlaceholder(text: string, host: string): boolean {
  const quoted = host.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // The words may wrap onto the next comment line ("…is a\n# placeholder").
  return new RegExp(`["'\`]${quoted}["'\`][\\s#]+is[\\s#]+a[\\s#]+placeholder\\b`).test(text);
}
