/**
 * The programs from outside npm that tests run, and the one check every such test makes first:
 * - `requires('nginx')`: node:test options for one test (`{}`, or `{ skip: '...' }`);
 * - `testsRequiring('redis-server')`: node:test's `test` and hooks for a file whose every test
 *   needs the programs; when one is missing the tests are registered as skipped and the hooks
 *   (which would start the program) do not run.
 *
 * Missing outside CI: each test is skipped with one line naming the program and the Debian package
 * that provides it (test/run.ts sums them up at the end of `npm test`). Under `CI=true` a missing
 * program throws when the file loads, so the file fails: CI installs everything and proves it all.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import {
  after as nodeAfter,
  afterEach as nodeAfterEach,
  before as nodeBefore,
  beforeEach as nodeBeforeEach,
  test as nodeTest,
  type TestFn,
  type TestOptions,
} from 'node:test';
import { awsToolEnv, DEBIAN_AWS, DEBIAN_PYTHON } from './server.js';

interface Program {
  /** The Debian packages that provide it, for `apt-get install`. */
  readonly packages: readonly string[];
  /** Why it is not usable here, or undefined when it is. */
  readonly missing: () => string | undefined;
}

/** The first executable `name` in a directory of PATH, or undefined. */
export function onPath(name: string, path = process.env['PATH'] ?? ''): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

/** Looked up on PATH, as the tests spawn it by name. Debian puts daemons in /usr/sbin, which a user's PATH may lack. */
function pathProgram(name: string): () => string | undefined {
  return () => {
    if (onPath(name) !== undefined) return undefined;
    const sbin = ['/usr/sbin', '/sbin'].find((dir) => existsSync(join(dir, name)));
    return sbin === undefined ? 'not found on PATH' : `not on PATH (it is in ${sbin}: add that to PATH)`;
  };
}

/** A fixed path: Debian's own build, where another on PATH would not do (e.g. pyenv's aws speaks JSON). */
function file(path: string): () => string | undefined {
  return () => (existsSync(path) ? undefined : `${path} not found`);
}

/** A module Debian's /usr/bin/python3 must import, with the environment the tests give it. */
function pythonModule(module: string): () => string | undefined {
  return () => {
    if (!existsSync(DEBIAN_PYTHON)) return `${DEBIAN_PYTHON} not found`;
    try {
      execFileSync(DEBIAN_PYTHON, ['-c', `import ${module}`], { env: awsToolEnv(), stdio: 'ignore' });
      return undefined;
    } catch {
      return `${DEBIAN_PYTHON} cannot import ${module}`;
    }
  };
}

/** All of `checks` must pass; the first that fails says why. */
function all(...checks: (() => string | undefined)[]): () => string | undefined {
  return () => checks.map((check) => check()).find((why) => why !== undefined);
}

export const PROGRAMS = {
  nginx: { packages: ['nginx'], missing: pathProgram('nginx') },
  'redis-server': { packages: ['redis-server'], missing: pathProgram('redis-server') },
  'systemd-analyze': { packages: ['systemd'], missing: pathProgram('systemd-analyze') },
  chromium: { packages: ['chromium'], missing: file('/usr/bin/chromium') },
  aws: { packages: ['awscli'], missing: file(DEBIAN_AWS) },
  boto3: { packages: ['python3-boto3'], missing: pythonModule('boto3') },
  kombu: { packages: ['python3-kombu'], missing: pythonModule('kombu') },
  celery: { packages: ['python3-celery'], missing: pythonModule('celery') },
  // kombu's SQS transport polls through its own pycurl client in a Celery worker.
  pycurl: { packages: ['python3-pycurl'], missing: pythonModule('pycurl') },
  'symfony-messenger-sqs': {
    packages: ['php-cli', 'php-symfony-amazon-sqs-messenger', 'php-async-aws-sqs'],
    missing: all(
      pathProgram('php'),
      file('/usr/share/php/Symfony/Component/Messenger/Bridge/AmazonSqs/autoload.php'),
      file('/usr/share/php/AsyncAws/Sqs/autoload.php'),
    ),
  },
  'aws-sdk-go-v2': {
    packages: ['golang-go', 'golang-github-aws-aws-sdk-go-v2-dev'],
    missing: all(pathProgram('go'), file('/usr/share/gocode/src/github.com/aws/aws-sdk-go-v2/service/sqs')),
  },
} as const satisfies Record<string, Program>;

export type ProgramName = keyof typeof PROGRAMS;

const seen = new Map<ProgramName, string | undefined>();

/**
 * One line per missing program ("nginx (apt-get install nginx): not found on PATH"), asked once
 * per process; empty when all are here.
 */
export function missingPrograms(programs: readonly ProgramName[]): string[] {
  const lines: string[] = [];
  for (const name of programs) {
    if (!seen.has(name)) seen.set(name, PROGRAMS[name].missing());
    const why = seen.get(name);
    if (why !== undefined)
      lines.push(`${name} (apt-get install ${PROGRAMS[name].packages.join(' ')}): ${why}`);
  }
  return lines;
}

/** The skip reason when one of `programs` is missing; under CI=true, throws instead. */
function skipReason(programs: readonly ProgramName[]): string | undefined {
  const lines = missingPrograms(programs);
  if (lines.length === 0) return undefined;
  if (process.env['CI'] === 'true') {
    throw new Error(`CI=true and a program the tests need is missing: ${lines.join('; ')}`);
  }
  return `needs ${lines.join('; ')}`;
}

/** node:test options for one test that runs `programs`. */
export function requires(...programs: ProgramName[]): { readonly skip?: string } {
  const skip = skipReason(programs);
  return skip === undefined ? {} : { skip };
}

export interface FileTests {
  readonly test: {
    (name: string, fn: TestFn): void;
    (name: string, options: TestOptions, fn: TestFn): void;
  };
  readonly before: typeof nodeBefore;
  readonly after: typeof nodeAfter;
  readonly beforeEach: typeof nodeBeforeEach;
  readonly afterEach: typeof nodeAfterEach;
}

/** node:test's `test` and hooks for a file whose every test (and hook) runs `programs`. */
export function testsRequiring(...programs: ProgramName[]): FileTests {
  const skip = skipReason(programs);
  if (skip === undefined) {
    return {
      test: (name: string, options: TestOptions | TestFn, fn?: TestFn) =>
        void (typeof options === 'function' ? nodeTest(name, options) : nodeTest(name, options, fn)),
      before: nodeBefore,
      after: nodeAfter,
      beforeEach: nodeBeforeEach,
      afterEach: nodeAfterEach,
    };
  }
  const noHook = (): void => {};
  return {
    test: (name: string) => void nodeTest(name, { skip }),
    before: noHook,
    after: noHook,
    beforeEach: noHook,
    afterEach: noHook,
  };
}
