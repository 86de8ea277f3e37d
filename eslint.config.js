// Two rules STYLE.md asks for, enforced rather than remembered:
//  - workflows/ stays deterministic: no Node built-ins, no value imports of activities/db/kafka
//    (type-only imports are fine: workflows see activities only as types);
//  - no floating promises anywhere (an unawaited produce or append is a lost write).
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = builtinModules.flatMap((m) => [m, `node:${m}`]);

export default tseslint.config(
  { ignores: ['node_modules/**', '.stack/**', '.cache/**', 'coverage/**'] },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'workflows must be deterministic: no Node built-ins' })),
          patterns: [
            {
              group: ['**/activities/**', '**/activities', '**/db/**', '**/db', '**/kafka/**', '**/kafka', 'kafkajs', 'pg', 'kysely', '@temporalio/activity', '@temporalio/worker', '@temporalio/client'],
              allowTypeImports: true,
              message: 'workflows see activities/db/kafka only as types (import type …)',
            },
          ],
        },
      ],
    },
  },
);
