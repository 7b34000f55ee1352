/**
 * The API model's shape vocabulary: enough of Smithy's to decode both wire protocols into one
 * typed input and to encode one output as JSON or as Query XML.
 *
 * `queryName` is the member's name on the Query wire; every list and map in SQS is flattened
 * there (`Attribute.1.Name`, not `Attributes.member.1`), so a collection member's queryName is
 * the name each element repeats under.
 */
export type Shape =
  | { readonly type: 'string' }
  | { readonly type: 'integer' }
  | { readonly type: 'boolean' }
  | { readonly type: 'blob' }
  | { readonly type: 'list'; readonly member: LazyShape }
  | {
      readonly type: 'map';
      readonly key: LazyShape;
      readonly value: LazyShape;
      readonly keyName: string;
      readonly valueName: string;
    }
  | ObjectShape;

export interface ObjectShape {
  readonly type: 'structure';
  readonly name: string;
  readonly required: readonly string[];
  readonly members: Readonly<Record<string, Member>>;
}

export interface Member {
  readonly shape: LazyShape;
  readonly queryName: string;
}

/** Shapes refer to each other before they are defined, so references may be thunks. */
export type LazyShape = Shape | (() => Shape);

export function resolve(s: LazyShape): Shape {
  return typeof s === 'function' ? s() : s;
}
