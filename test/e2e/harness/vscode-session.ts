// End-to-end harness: a real VS Code (code-server) with this extension, driven by Debian's
// Chromium through playwright-core, as a person would use it. Every e2e test opens one session,
// acts through the UI, asserts on what is on screen, and closes it (tearing everything down).
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Frame, type FrameLocator, type Page } from 'playwright-core';
import { repoRoot, startCodeServer, type RunningCodeServer } from '../../../scripts/code-server';
import { untilValue } from '../../harness/until';

export const E2E_OUTPUT = path.join(repoRoot, 'test-output', 'e2e');
const CHROMIUM = process.env.FSDP_STUDIO_CHROMIUM ?? '/usr/bin/chromium';

export interface SessionOptions {
  /** Folder to open (default: samples/). */
  workspace?: string;
  /** Keep Workspace Trust active and leave the folder untrusted (default: trust everything). */
  untrusted?: boolean;
  settings?: Record<string, unknown>;
  env?: NodeJS.ProcessEnv;
  /** Install this .vsix into the fresh code-server instead of loading the repository. */
  vsix?: string;
}

export class VsCodeSession {
  private constructor(
    readonly server: RunningCodeServer,
    private readonly browser: Browser,
    readonly page: Page,
    private readonly dataDir: string,
  ) {}

  static async open(opts: SessionOptions = {}): Promise<VsCodeSession> {
    const workspace = opts.workspace ?? path.join(repoRoot, 'samples');
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-e2e-'));
    const settings = {
      // Trusted by default: most tests exercise launching; untrusted tests turn trust back on.
      'security.workspace.trust.enabled': !!opts.untrusted,
      'security.workspace.trust.startupPrompt': 'never',
      'workbench.tips.enabled': false,
      'window.restoreWindows': 'none',
      'git.openRepositoryInParentFolders': 'never',
      ...opts.settings,
    };
    const server = await startCodeServer({
      workspace,
      dataDir,
      settings,
      env: opts.env,
      ...(opts.vsix ? { vsix: opts.vsix } : {}),
    });
    let browser: Browser | undefined;
    try {
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: [
          '--no-sandbox',
          '--disable-gpu',
          '--disable-dev-shm-usage',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--no-first-run',
        ],
      });
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(`${server.url}?folder=${encodeURIComponent(workspace)}`);
      await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
      const session = new VsCodeSession(server, browser, page, dataDir);
      await session.waitForExtensionHost();
      return session;
    } catch (e) {
      await browser?.close();
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
      throw e;
    }
  }

  /** The folder code-server keeps installed extensions in. */
  get extensionsDir(): string {
    return path.join(this.dataDir, 'extensions');
  }

  /** Waits until the workbench has finished restoring and the status bar is up. */
  private async waitForExtensionHost(): Promise<void> {
    await this.page.waitForSelector('.statusbar', { timeout: 60_000 });
    await this.page.waitForTimeout(500);
  }

  /**
   * Opens the command palette and types a query; returns the labels it lists. Retypes the query
   * until something matches, because contributed commands appear only once the workbench has
   * scanned the extensions.
   */
  async paletteEntries(query: string, timeoutMs = 30_000): Promise<string[]> {
    const rows = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
    const deadline = Date.now() + timeoutMs;
    let labels: string[];
    do {
      await this.openPalette('');
      await this.openPalette(query);
      await rows
        .first()
        .waitFor({ timeout: 10_000 })
        .catch(() => undefined);
      labels = await rows.evaluateAll((els) =>
        els.map((e) => (e.getAttribute('aria-label') ?? e.textContent ?? '').trim()),
      );
      if (labels.some((l) => l.toLowerCase().includes(query.toLowerCase()))) return labels;
      await this.page.waitForTimeout(500);
    } while (Date.now() < deadline);
    return labels;
  }

  /**
   * Whether the palette offers the command titled `title`, looked up once in a freshly opened
   * palette: yes when a row reads the title; no once the list is the title's and has no such row —
   * it says it has no matching command, or begins with "similar commands" or with a command whose
   * matched letters are highlighted (the list the palette opens with, for the empty query, has
   * neither). For a workbench that has read the extension's manifest (its contributed commands
   * appear all at once).
   */
  async paletteOffers(title: string, timeoutMs = 30_000): Promise<boolean> {
    await this.closeQuickInput();
    await this.openPalette(title);
    const input = this.page.locator('.quick-input-widget input');
    const rows = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
    const seen = await untilValue(
      `the palette's rows for "${title}"`,
      async () => ({
        value: await input.inputValue().catch(() => ''),
        rows: await rows.evaluateAll((els) =>
          els.map((e) => ({
            label: (e.getAttribute('aria-label') ?? e.textContent ?? '').trim(),
            highlighted: !!e.querySelector('.highlight'),
          })),
        ),
      }),
      ({ value, rows }) =>
        value === `>${title}` &&
        rows.length > 0 &&
        (rows.some((r) => r.label.includes(title)) ||
          rows[0].highlighted ||
          /^No matching commands|, similar commands$/.test(rows[0].label)),
      timeoutMs,
      100,
    );
    await this.closeQuickInput();
    return seen.rows.some((r) => r.label.includes(title));
  }

  /** Closes whatever quick input is open (the palette, a command's pick or input box) and waits until it is gone. */
  async closeQuickInput(): Promise<void> {
    const input = this.page.locator('.quick-input-widget input');
    for (let attempt = 1; await input.isVisible(); attempt++) {
      if (attempt > 3) throw new Error('the quick input did not close on Escape (three presses)');
      await this.page.keyboard.press('Escape');
      await input.waitFor({ state: 'hidden', timeout: 5_000 }).catch(() => undefined);
    }
  }

  /** Runs a command by its palette title, "Category: Title". */
  async runCommand(title: string): Promise<void> {
    const labels = await this.paletteEntries(title);
    if (!labels.some((l) => l.includes(title)))
      throw new Error(`command "${title}" is not in the palette; it lists: ${labels.join(' | ')}`);
    await this.page
      .locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: title })
      .first()
      .click();
  }

  /** Opens a workspace file in an editor by its path relative to the workspace, via Quick Open. */
  async openFile(relativePath: string): Promise<void> {
    const name = path.basename(relativePath);
    await this.openPalette('');
    const input = this.page.locator('.quick-input-widget input');
    await input.fill(relativePath);
    const row = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: name }).first();
    await row.waitFor({ timeout: 30_000 });
    await row.click();
    await this.page.locator(`.tabs-container .tab[aria-label*="${name}"]`).first().waitFor({ timeout: 30_000 });
  }

  /** The text of the active editor as rendered (Monaco renders only visible lines). */
  async editorText(): Promise<string> {
    return (await this.page.locator('.editor-instance .view-lines').first().innerText()).replace(/\u00a0/g, ' ');
  }

  /** Picks the item of the open quick pick whose label contains `text` (waits for it to appear). */
  async pickQuickItem(text: string | RegExp, timeoutMs = 30_000): Promise<void> {
    const row = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: text }).first();
    await row.waitFor({ timeout: timeoutMs });
    await row.click({ timeout: timeoutMs });
  }

  /** Types into the open quick pick or input box and presses Enter. */
  async typeIntoQuickInput(text: string, opts: { title?: RegExp; fileDialog?: boolean } = {}): Promise<void> {
    const input = this.page.locator('.quick-input-widget input');
    const rows = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
    await input.waitFor({ timeout: 20_000 });
    if (opts.title) {
      // Dialogs that follow one another share the widget: wait for this one, not the last one closing.
      const title = this.page.locator('.quick-input-widget .quick-input-title');
      await untilValue(
        `a quick input titled ${opts.title}`,
        () => title.innerText().catch(() => ''),
        (t) => opts.title!.test(t),
        20_000,
      );
    }
    if (opts.fileDialog) {
      // The simple file dialog fills in its folder once it has read it, and a path typed before that
      // is joined to it ("<folder>//tmp/…", seen in CI): type over the folder, not before it.
      await untilValue(
        "the file dialog's folder in its box",
        () => input.inputValue().catch(() => ''),
        (v) => v.startsWith('/') || v.startsWith('~'),
        20_000,
      );
      // It puts the folder in the box before it has read it, and again once it has listed it (its
      // rows): a path typed in between is overwritten, and Enter then takes the folder itself where
      // folders may be picked (seen in a fresh-clone run: "Prepare training data" got the workspace
      // as the text). So wait for the listing too.
      await rows.first().waitFor({ timeout: 20_000 });
    }
    for (let fill = 1; ; fill++) {
      await input.fill(text);
      if (opts.fileDialog) {
        // The dialog lists the typed path's folder, its entry among the rows: then it has caught up.
        await rows
          .filter({ hasText: path.basename(text) })
          .first()
          .waitFor({ timeout: 10_000 })
          .catch(() => undefined); // checked below: the box still holds the text, or it is typed again
      }
      if ((await input.inputValue().catch(() => '')) === text) break;
      if (fill === 3) throw new Error(`the quick input did not take ${JSON.stringify(text)}`);
    }
    await input.press('Enter');
    // An Enter that reaches the box while it is still settling (a loaded machine, a toast arriving)
    // can be dropped, leaving the box open with the text typed (seen in CI on "Rename run"): while
    // the same box is open with the same text, press it again.
    for (let again = 0; again < 3; again++) {
      const gone = await this.page
        .waitForFunction(() => !document.querySelector('.quick-input-widget input')?.checkVisibility(), undefined, {
          timeout: 3000,
        })
        .then(
          () => true,
          () => false,
        );
      if (gone) return;
      if ((await input.inputValue().catch(() => '')) !== text) {
        // The simple file dialog can put its folder back in the box after the path was typed (it read
        // the folder late, on a loaded machine; seen in a fresh-clone run: Enter then opened the
        // folder and the box stayed on "<workspace>/"): while the same dialog is open, type it again.
        const same =
          opts.fileDialog &&
          opts.title?.test(
            await this.page
              .locator('.quick-input-widget .quick-input-title')
              .innerText()
              .catch(() => ''),
          );
        if (!same) return;
        await input.fill(text);
      }
      await input.press('Enter');
    }
  }

  /**
   * Reloads the window with "Developer: Reload Window", as a person does: the workbench saves its
   * state (open editors, webview state) first, the extension host restarts, editors are restored.
   */
  async reload(): Promise<void> {
    // A mark in the old document: the reload is done when a document without it is up (a 'load'
    // event alone can come from the old page before it navigates away).
    await this.page.evaluate('window.__fsdpBeforeReload = true');
    await this.runCommand('Developer: Reload Window');
    await this.page.waitForFunction('!window.__fsdpBeforeReload', undefined, { timeout: 60_000, polling: 200 });
    await this.page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
    await this.waitForExtensionHost();
  }

  /**
   * Evaluates a JavaScript expression in the webviews' pages and returns the first value that is
   * not undefined (JSON-serialisable), waiting until one gives one. An expression names what it
   * reads (e.g. a panel's test hook), so it picks its panel among several. An expression, not a
   * function: tsx compiles the test's functions with helpers that do not exist in the page.
   */
  async inWebview<T>(expression: string, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let lastError: unknown;
    while (Date.now() < deadline) {
      // A webview's content frame is the inner fake.html document of its iframe.webview.
      for (const frame of this.page.frames().filter((f) => f.url().includes('/webview/browser/pre/fake.html'))) {
        try {
          const value = await frame.evaluate(expression);
          if (value !== undefined) return value as T;
        } catch (e) {
          lastError = e; // the webview is (re)loading
        }
      }
      await this.page.waitForTimeout(250);
    }
    throw new Error(
      `no webview answered ${expression} within ${timeoutMs} ms${lastError ? `: ${(lastError as Error).message.split('\n')[0]}` : ''}`,
    );
  }

  /** The problem squiggles (error, warning) rendered in the active editor. */
  squiggles(severity: 'error' | 'warning' = 'error') {
    return this.page.locator(`.editor-instance .squiggly-${severity}`);
  }

  /**
   * Moves the cursor to the next problem in the active editor (F8) and returns the message its
   * peek shows; the peek stays open (Escape closes it).
   */
  async nextProblem(): Promise<string> {
    await this.page.locator('.editor-instance .view-lines').first().click();
    await this.page.keyboard.press('F8');
    const peek = this.page.locator('.marker-widget .descriptioncontainer').first();
    await peek.waitFor({ timeout: 20_000 });
    return (await peek.innerText()).trim();
  }

  /**
   * Opens the quick-fix menu at the cursor (Ctrl+.) and applies the fix titled `title`, choosing it
   * with the keyboard as a person would (the menu's overlay takes mouse clicks meant for the page).
   */
  async applyQuickFix(title: string): Promise<void> {
    // Ctrl+. pressed while a peek or widget is still closing can be taken by it, or open the menu before
    // the fix is offered: open the menu again until it lists the fix (each look bounded, three looks).
    const row = this.page.locator('.action-widget .monaco-list-row', { hasText: title }).first();
    for (let look = 1; ; look++) {
      await this.page.keyboard.press('Control+.');
      const shown = await row.waitFor({ timeout: 10_000 }).then(
        () => true,
        () => false,
      );
      if (shown) break;
      if (look === 3) throw new Error(`the quick-fix menu did not offer "${title}" in three looks`);
      await this.page.keyboard.press('Escape');
    }
    const rows = await this.page.locator('.action-widget .monaco-list-row').count();
    for (let i = 0; i <= rows; i++) {
      const focused = await this.page
        .locator('.action-widget .monaco-list-row.focused')
        .first()
        .getAttribute('aria-label')
        .catch(() => null);
      if (focused === title) {
        await this.page.keyboard.press('Enter');
        return;
      }
      await this.page.keyboard.press('ArrowDown');
    }
    throw new Error(`the quick-fix menu has no "${title}"`);
  }

  /**
   * The content frame of a webview (to click in it): the first whose page makes `expression`
   * truthy, by default the first webview there is.
   */
  async webviewFrame(expression = 'true', timeoutMs = 30_000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      for (const frame of this.page.frames().filter((f) => f.url().includes('/webview/browser/pre/fake.html'))) {
        if (await frame.evaluate(`!!(${expression})`).catch(() => false)) return frame;
      }
      await this.page.waitForTimeout(250);
    }
    throw new Error(`no webview with ${expression} within ${timeoutMs} ms`);
  }

  async closePalette(): Promise<void> {
    await this.page.keyboard.press('Escape');
  }

  /** Waits for a notification toast containing `text` and returns its full message. */
  async waitForNotification(text: string | RegExp, timeoutMs = 30_000): Promise<string> {
    const toast = this.page.locator('.notifications-toasts .notification-toast', { hasText: text }).first();
    await toast.waitFor({ timeout: timeoutMs });
    return (await toast.locator('.notification-list-item-message').first().textContent()) ?? '';
  }

  /** Picks a colour theme by its label ("Dark Modern", "Light High Contrast") with "Preferences: Color Theme", as a person does. */
  async setColorTheme(label: string): Promise<void> {
    await this.runCommand('Preferences: Color Theme');
    const input = this.page.locator('.quick-input-widget input');
    await input.fill(label);
    const rows = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
    await rows.first().waitFor({ timeout: 20_000 });
    const names = await rows.locator('.label-name').allInnerTexts();
    const i = names.findIndex((n) => n.trim() === label);
    if (i < 0) throw new Error(`no colour theme "${label}" among ${names.join(' | ')}`);
    await rows.nth(i).click();
  }

  /** Copies VS Code's logs (extension hosts, output channels) to test-output/e2e/<name>/, for failure reports. */
  saveLogs(name: string): string {
    const dest = path.join(E2E_OUTPUT, name);
    rmSync(dest, { recursive: true, force: true });
    cpSync(path.join(this.dataDir, 'user-data', 'logs'), dest, { recursive: true });
    return dest;
  }

  /** The text of every notification on screen, for failure reports. */
  async notificationsText(): Promise<string> {
    return (
      await this.page
        .locator('.notifications-toasts')
        .allInnerTexts()
        .catch(() => [])
    )
      .join(' | ')
      .replace(/\s+/g, ' ');
  }

  /** The DOM of the active webview panel (nested iframes in VS Code for the web). */
  webview(): FrameLocator {
    return this.page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
  }

  /** Saves a screenshot under test-output/e2e/ and returns its path. */
  async screenshot(name: string): Promise<string> {
    mkdirSync(E2E_OUTPUT, { recursive: true });
    const file = path.join(E2E_OUTPUT, `${name}.png`);
    await this.page.screenshot({ path: file });
    return file;
  }

  /**
   * Saves a screenshot of the editor area alone (no side bar, no notifications) under
   * test-output/e2e/, for documentation: what a panel looks like.
   */
  async screenshotEditor(name: string): Promise<string> {
    mkdirSync(E2E_OUTPUT, { recursive: true });
    const file = path.join(E2E_OUTPUT, `${name}.png`);
    const toasts = (visibility: string) =>
      this.page.evaluate(
        `document.querySelectorAll('.notifications-toasts').forEach((t) => (t.style.visibility = '${visibility}'))`,
      );
    await toasts('hidden');
    try {
      const box = await this.page.locator('.part.editor').first().boundingBox();
      await this.page.screenshot({ path: file, ...(box ? { clip: box } : {}) });
    } finally {
      await toasts('');
    }
    return file;
  }

  /**
   * For an afterEach hook: when the test failed, a screenshot, the notifications on screen and VS
   * Code's logs, saved under test-output/e2e/failed-<title>.
   */
  async reportFailure(test: { title: string; state?: string } | undefined): Promise<void> {
    if (test?.state !== 'failed') return;
    const name = `failed-${test.title.slice(0, 40).replace(/\W+/g, '-')}`;
    await this.screenshot(name);
    console.error(
      `notifications at the failure: ${await this.notificationsText()}; logs in ${this.saveLogs(`${name}-logs`)}`,
    );
  }

  async close(): Promise<void> {
    await this.browser.close().catch(() => undefined);
    await this.server.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  private async openPalette(text: string): Promise<void> {
    const input = this.page.locator('.quick-input-widget input');
    // A quick input still closing (the last pick's) reads visible and then hides: open the palette
    // until its input takes the text (each try bounded, four tries).
    for (let attempt = 1; ; attempt++) {
      const last = attempt === 4;
      const giveUpUnlessLast = (e: unknown): false => {
        if (last) throw e;
        return false;
      };
      if (!(await input.isVisible())) {
        await this.focusWorkbench();
        await this.page.keyboard.press('Control+Shift+P');
        const shown = await input.waitFor({ timeout: 10_000 }).then(() => true, giveUpUnlessLast);
        if (!shown) continue;
      }
      const filled = await input.fill(`>${text}`, { timeout: 5_000 }).then(() => true, giveUpUnlessLast);
      if (filled) return;
    }
  }

  /**
   * Gives the keyboard to the workbench itself. A click into the editor area lands in a webview
   * when one is open there (a dashboard, a comparison): its iframe keeps the focus, so the palette
   * that Ctrl+Shift+P opens loses it at once and closes. So the click goes to the workbench and
   * any focused webview frame is then blurred.
   */
  private async focusWorkbench(): Promise<void> {
    await this.page
      .locator('.monaco-workbench')
      .click({ position: { x: 700, y: 400 } })
      .catch(() => undefined);
    await this.page.evaluate(`(() => {
      const active = document.activeElement;
      if (active instanceof HTMLElement && active.tagName === 'IFRAME') active.blur();
    })()`);
  }
}
