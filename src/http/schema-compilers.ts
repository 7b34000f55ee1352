/**
 * Schema compilers of the two planes.
 *
 * fastify() loads its default schema compilers (ajv with its formats, fast-json-stringify) while it
 * builds an instance: about 60 ms of a half-second start. Given as `schemaController`, these
 * factories load the very same compilers the first time a route with a schema needs them. One
 * difference if such a route is ever added: fastify lower-cases the property names of a `headers`
 * schema only for its default compiler, so write them in lower case.
 *
 * The admin routes, the only ones with schemas (admin-schemas.ts), use compilers of their own
 * ({@link adminSchemaScope}): Ajv without type coercion for JSON bodies, and JSON.stringify for
 * answers.
 */
import { createRequire } from 'node:module';
import type {
  FastifyError,
  FastifyInstance,
  FastifySchemaValidationError,
  FastifyServerOptions,
} from 'fastify';
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';

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

// ---- the admin routes' ---------------------------------------------------------------------------

// Ajv is loaded, and each schema compiled, when a request first needs it, as above: the control
// plane starts without paying for it.
const requireCommonJs = createRequire(import.meta.url);
let bodyAjv: Ajv | undefined;
let paramAjv: Ajv | undefined;

function newAjv(coerceTypes: boolean): Ajv {
  const { Ajv } = requireCommonJs('ajv') as { Ajv: new (options: object) => Ajv };
  // Bodies are JSON and taken as typed (7 is not the string "7"); params and querystrings are
  // text, typed by their schemas. date-time only appears in answers, which are not validated.
  const ajv = new Ajv({ coerceTypes, useDefaults: coerceTypes, allowUnionTypes: true, allErrors: false });
  ajv.addFormat('date-time', true);
  return ajv;
}

/**
 * The validator compiler of the admin routes. An absent body is validated as `{}` and handed on as
 * `{}` (so a required field is reported as missing, and handlers always see an object).
 */
export function adminValidatorCompiler({ schema, httpPart }: { schema: object; httpPart?: string }) {
  const isBody = httpPart === 'body';
  let validate: ValidateFunction | undefined;
  return (data: unknown): { value: unknown } | { error: ErrorObject[] } => {
    const ajv = isBody ? (bodyAjv ??= newAjv(false)) : (paramAjv ??= newAjv(true));
    validate ??= ajv.compile(schema);
    const value = isBody && (data === null || data === '') ? {} : data;
    return validate(value) ? { value } : { error: validate.errors ?? [] };
  };
}

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  integer: 'a whole number',
  number: 'a number',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'an array',
  null: 'null',
};

/**
 * A validation error as this API words it: the field by its path (`attributes.a.DataType`), then
 * what is wrong with it.
 */
export function validationMessage(errors: readonly FastifySchemaValidationError[], part: string): string {
  const e = errors[0];
  if (e === undefined) return `the ${part} is not valid`;
  const path = e.instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
  const where = path === '' ? (part === 'body' ? 'the body' : `the ${part}`) : path;
  const params = e.params;
  switch (e.keyword) {
    case 'required':
      return `${path === '' ? '' : `${path}.`}${String(params['missingProperty'])} is required`;
    case 'type': {
      const types = String(params['type']).split(',');
      const names = types.map((t) => TYPE_NAMES[t] ?? t);
      const last = names.pop() ?? '';
      return `${where} must be ${names.length === 0 ? last : `${names.join(', ')} or ${last}`}`;
    }
    case 'enum':
      return `${where} must be one of: ${(params['allowedValues'] as unknown[]).map(String).join(', ')}`;
    default:
      return `${where} ${e.message ?? 'is not valid'}`;
  }
}

/**
 * JSON.stringify, but for an Error: fastify's own last-resort error handler hands the route's
 * serializer one whose fields are not enumerable, and writes for it what it writes without a
 * schema.
 */
function serialize(data: unknown): string {
  if (!(data instanceof Error)) return JSON.stringify(data);
  const e = data as Partial<FastifyError> & { error?: string };
  return JSON.stringify({ statusCode: e.statusCode, code: e.code, error: e.error, message: e.message });
}

/**
 * Makes `app` (a plugin scope of admin routes) validate with {@link adminValidatorCompiler},
 * serialize answers with JSON.stringify, and answer a validation error 400 `{error: 'BadRequest',
 * message}`; other errors go to `onError`, then to the parent's handler.
 *
 * JSON.stringify, as for a route without a schema: fast-json-stringify would drop what a response
 * schema does not list, and the schemas describe the answers, they do not shape them.
 */
export function adminSchemaScope(
  app: FastifyInstance,
  onError: (err: FastifyError) => { status: number; body: { error: string; message: string } } | undefined,
): void {
  app.setValidatorCompiler(adminValidatorCompiler);
  app.setSerializerCompiler(() => serialize);
  const parent = app.errorHandler;
  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err.validation !== undefined) {
      return reply.code(400).send({
        error: 'BadRequest',
        message: validationMessage(err.validation, err.validationContext ?? 'body'),
      });
    }
    const mapped = onError(err);
    if (mapped !== undefined) return reply.code(mapped.status).send(mapped.body);
    return parent.call(app, err, req, reply);
  });
}
