/**
 * The API model's shapes turned, once at module load, into plain lookup tables both codecs walk:
 * thunks resolved, members indexed by JSON name and by Query name, XML tags pre-built. Walking these
 * costs no closure calls and no string building beyond what the wire format itself needs.
 */
import { operations, type ActionName } from '../sqs/model.generated.js';
import { resolve, type Shape } from '../sqs/shape.js';

// Node kinds are the shape type names: comparing interned string literals is as cheap as comparing
// numbers, and needs no imported constants (which tsx, our runtime, reads through getters).

export interface ScalarNode {
  readonly k: 'string' | 'integer' | 'boolean' | 'blob';
  readonly scalar: true;
}

export interface ListNode {
  readonly k: 'list';
  readonly scalar: false;
  member: Node;
}

export interface MapNode {
  readonly k: 'map';
  readonly scalar: false;
  readonly keyName: string;
  readonly valueName: string;
  readonly keyOpen: string;
  readonly keyClose: string;
  readonly valueOpen: string;
  readonly valueClose: string;
  key: Node;
  value: Node;
}

export interface MemberNode {
  /** The JSON member name, which is also the key in the typed input and output objects. */
  readonly name: string;
  readonly queryName: string;
  readonly open: string;
  readonly close: string;
  node: Node;
}

export interface StructNode {
  readonly k: 'structure';
  readonly scalar: false;
  readonly name: string;
  readonly required: readonly string[];
  readonly members: MemberNode[];
  readonly byName: Map<string, MemberNode>;
  readonly byQueryName: Map<string, MemberNode>;
  /**
   * Members by the low 6 bits of their Query name's first character, so that the Query decoder
   * can match a name in place (no slicing, no hashing).
   */
  readonly queryBuckets: readonly MemberNode[][];
  /** Whether any member is not a scalar, i.e. the Query decoder's finalising pass must visit it. */
  hasCollections: boolean;
}

export type Node = ScalarNode | ListNode | MapNode | StructNode;

const SCALARS: Readonly<Record<'string' | 'integer' | 'boolean' | 'blob', ScalarNode>> = {
  string: { k: 'string', scalar: true },
  integer: { k: 'integer', scalar: true },
  boolean: { k: 'boolean', scalar: true },
  blob: { k: 'blob', scalar: true },
};

const cache = new Map<Shape, Node>();

/** Placeholder while a node's children are compiled; replaced before anyone reads it. */
const PENDING: ScalarNode = { k: 'string', scalar: true };

/**
 * SQS has no list or map directly inside a list or map, and the flattened Query forms of one are
 * ambiguous; refuse it at load time rather than encode it wrongly if the model ever grows one.
 */
function assertNotCollection(node: Node): void {
  if (node.k === 'list' || node.k === 'map') throw new Error('A collection directly inside a collection');
}

export function compile(lazy: Shape | (() => Shape)): Node {
  const shape = resolve(lazy);
  const hit = cache.get(shape);
  if (hit !== undefined) return hit;
  switch (shape.type) {
    case 'string':
    case 'integer':
    case 'boolean':
    case 'blob': {
      const node = SCALARS[shape.type];
      cache.set(shape, node);
      return node;
    }
    case 'list': {
      // Registered before its member is compiled so that a recursive shape terminates.
      const node: ListNode = { k: 'list', scalar: false, member: PENDING };
      cache.set(shape, node);
      node.member = compile(shape.member);
      assertNotCollection(node.member);
      return node;
    }
    case 'map': {
      const node: MapNode = {
        k: 'map',
        scalar: false,
        keyName: shape.keyName,
        valueName: shape.valueName,
        keyOpen: `<${shape.keyName}>`,
        keyClose: `</${shape.keyName}>`,
        valueOpen: `<${shape.valueName}>`,
        valueClose: `</${shape.valueName}>`,
        key: PENDING,
        value: PENDING,
      };
      cache.set(shape, node);
      node.key = compile(shape.key);
      node.value = compile(shape.value);
      assertNotCollection(node.value);
      return node;
    }
    case 'structure': {
      const node: StructNode = {
        k: 'structure',
        scalar: false,
        name: shape.name,
        required: shape.required,
        members: [],
        byName: new Map(),
        byQueryName: new Map(),
        queryBuckets: Array.from({ length: 64 }, (): MemberNode[] => []),
        hasCollections: false,
      };
      cache.set(shape, node);
      for (const [name, member] of Object.entries(shape.members)) {
        const m: MemberNode = {
          name,
          queryName: member.queryName,
          open: `<${member.queryName}>`,
          close: `</${member.queryName}>`,
          node: compile(member.shape),
        };
        node.members.push(m);
        node.byName.set(name, m);
        // ReceiveMessageRequest gives AttributeNames and MessageSystemAttributeNames the same
        // Query name (AttributeName); the first member in model order, the one Query clients
        // have always sent, keeps it.
        if (!node.byQueryName.has(m.queryName)) {
          node.byQueryName.set(m.queryName, m);
          node.queryBuckets[m.queryName.charCodeAt(0) & 63]?.push(m);
        }
        // Any non-scalar member counts: a nested structure may still be half-compiled here.
        if (!m.node.scalar) node.hasCollections = true;
      }
      return node;
    }
  }
}

export interface CompiledOperation {
  readonly action: ActionName;
  readonly input: StructNode;
  readonly output: StructNode | undefined;
  /** `<XxxResponse xmlns="…">` */
  readonly responseOpen: string;
  /** `</XxxResponse>` */
  readonly responseClose: string;
  /** `<XxxResult>` */
  readonly resultOpen: string;
  /** `</XxxResult>` */
  readonly resultClose: string;
  /** `<XxxResult/>`: an empty result, as AWS writes it. */
  readonly resultEmpty: string;
}

export const XMLNS = 'http://queue.amazonaws.com/doc/2012-11-05/';

function asStruct(node: Node, what: string): StructNode {
  if (node.k !== 'structure') throw new Error(`${what} is not a structure`);
  return node;
}

/** Every action by name; a Map so that names like `toString` or `__proto__` find nothing. */
export const compiledOperations: ReadonlyMap<string, CompiledOperation> = new Map(
  (Object.keys(operations) as ActionName[]).map((action) => {
    const op = operations[action];
    const output: Shape | undefined = op.output;
    const compiled: CompiledOperation = {
      action,
      input: asStruct(compile(op.input), `${action} input`),
      output: output === undefined ? undefined : asStruct(compile(output), `${action} output`),
      responseOpen: `<${action}Response xmlns="${XMLNS}">`,
      responseClose: `</${action}Response>`,
      resultOpen: `<${action}Result>`,
      resultClose: `</${action}Result>`,
      resultEmpty: `<${action}Result/>`,
    };
    return [action, compiled] as const;
  }),
);
