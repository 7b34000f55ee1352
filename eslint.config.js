// @ts-check
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', '.bench/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // node:test's test() and describe() return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  ...layers(),
  {
    files: ['**/*.js', '**/*.mjs'],
    ignores: ['src/http/admin-page/**'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: globals.node },
  },
  {
    // The admin page's script runs in the browser (a module script), never in node.
    files: ['src/http/admin-page/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: globals.browser },
    rules: {
      ...tseslint.configs.disableTypeChecked.rules,
      eqeqeq: 'error',
      'no-var': 'error',
      'prefer-const': 'error',
    },
  },
);

/**
 * The layer rules of docs/architecture.md ("Layers"), enforced: a file of a layer may import only
 * what the table says. Files in nested folders (sqs/actions/) reach out with more `../`, hence
 * `(\.\./)+`. Keep this in step with the table.
 */
function layers() {
  const outside = (...folders) => ({
    regex: `^(\\.\\./)+(${folders.join('|')})/`,
    message: 'Against the layers of docs/architecture.md.',
  });
  const wiring = {
    regex: '^(\\.\\./)+(config|flags|flag-values|main|server|index|seed|seed-file)\\.js$',
    message: 'Layers do not import the wiring (docs/architecture.md).',
  };
  const packages = (...names) => ({
    regex: `^(${names.join('|')})(/|$)`,
    message: 'This layer does no I/O of this kind (docs/architecture.md).',
  });
  const rule = (files, ...patterns) => ({
    files,
    rules: { 'no-restricted-imports': ['error', { patterns }] },
  });
  return [
    rule(['src/core/**/*.ts'], {
      regex: '^(?!\\./|\\.\\./shard/|node:crypto$)',
      message:
        'core imports nothing outside core but the pure shard functions, and does no I/O (docs/architecture.md).',
    }),
    rule(
      ['src/sqs/**/*.ts'],
      outside('protocol', 'auth', 'persistence', 'ha', 'http', 'cli', 'wiring'),
      wiring,
      packages('fastify', 'ioredis', 'pino'),
    ),
    rule(
      ['src/protocol/**/*.ts'],
      outside('auth', 'persistence', 'ha', 'http', 'cli', 'wiring'),
      wiring,
      packages('fastify', 'ioredis', 'pino'),
    ),
    rule(['src/shard/**/*.ts'], {
      regex: '^(?!\\./|node:crypto$)',
      message: 'shard is pure: it imports nothing outside shard but node:crypto (docs/architecture.md).',
    }),
    rule(['src/auth/**/*.ts'], {
      regex: '^(\\.\\./|fastify|ioredis)',
      message: 'auth imports nothing outside auth (docs/architecture.md).',
    }),
    rule(
      ['src/persistence/**/*.ts'],
      outside('sqs', 'protocol', 'auth', 'ha', 'http', 'cli', 'wiring'),
      wiring,
      packages('fastify', 'pino'),
    ),
    rule(
      ['src/ha/**/*.ts'],
      outside('sqs', 'protocol', 'auth', 'http', 'cli', 'wiring'),
      wiring,
      packages('fastify', 'pino'),
    ),
    rule(
      ['src/owners/**/*.ts'],
      outside('protocol', 'auth', 'http', 'cli', 'wiring'),
      wiring,
      packages('fastify', 'pino'),
    ),
    rule(['src/http/**/*.ts'], outside('cli', 'wiring'), {
      regex: '^(\\.\\./)+(main|server|index|config|seed|seed-file)\\.js$',
      message: 'The planes are given what they need by the wiring (src/server.ts), not the reverse.',
    }),
  ];
}
