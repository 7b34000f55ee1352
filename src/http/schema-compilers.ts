/**
 * fastify() loads its default schema compilers (ajv with its formats, fast-json-stringify) while it
 * builds an instance: about 60 ms of a half-second start, for the routes with a JSON schema, of
 * which neither plane has one. Given as `schemaController`, these factories load the very same
 * compilers the first time a route with a schema needs them.
 *
 * One difference if such a route is ever added: fastify lower-cases the property names of a
 * `headers` schema only for its default compiler, so write them in lower case.
 */
import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

type CompilersFactory = NonNullable<
  NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']
>;
type ValidatorFactory = NonNullable<CompilersFactory['buildValidator']>;
type SerializerFactory = NonNullable<CompilersFactory['buildSerializer']>;

// Resolved from fastify's folder: the compilers are its dependencies, at the versions it wants.
const requireFromFastify = createRequire(import.meta.resolve('fastify'));

let validatorFactory: ValidatorFactory | undefined;
let serializerFactory: SerializerFactory | undefined;

export const lazySchemaController = {
  compilersFactory: {
    buildValidator: (externalSchemas, options) => {
      validatorFactory ??= (requireFromFastify('@fastify/ajv-compiler') as () => ValidatorFactory)();
      return validatorFactory(externalSchemas, options);
    },
    buildSerializer: (externalSchemas, options) => {
      serializerFactory ??= (
        requireFromFastify('@fastify/fast-json-stringify-compiler') as () => SerializerFactory
      )();
      return serializerFactory(externalSchemas, options);
    },
  },
} satisfies FastifyServerOptions['schemaController'];
