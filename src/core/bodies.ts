/**
 * Message bodies, kept as UTF-8 bytes in large Buffers outside the V8 heap.
 *
 * A queued message lives for seconds to days, so a body kept as a string is copied by two
 * scavenges, promoted, and marked by every major GC after: with 400,000 messages queued, GC was
 * half of a batch send's own work (scripts/bench/micro.ts), and major GCs on the server's one CPU
 * are what its latency tail is made of (docs/performance.md, "Persistence"). In a Buffer chunk a
 * body costs the collector nothing; the request's string dies young, which is cheap. A body is
 * decoded again each time it is read (a receive, a write to Redis): ~0.1 µs for 256 bytes.
 *
 * Bodies are appended to the current chunk. A chunk is dropped when its last body is freed; one
 * that is mostly free (a quarter or less of it still held) has what it still holds copied to the
 * current chunk, so a few old messages cannot pin many chunks: memory stays within about four
 * times the live bytes, plus the current chunk. A body too large to share a chunk gets one of its
 * own. Valid SQS bodies are valid Unicode (the body character rule), so UTF-8 keeps them exactly.
 */

export const CHUNK_BYTES = 256 * 1024;
/** Bodies of this many bytes or more get a chunk of their own. */
const OWN_CHUNK_BYTES = CHUNK_BYTES / 4;
/**
 * Emptied chunks kept for reuse, up to this many (16 MiB): the first write to a page of new
 * memory costs a page fault, on the bench's VMs ~0.9 µs per 256-byte body, 3 times the write.
 */
const MAX_SPARE_CHUNKS = 64;
/** The most UTF-8 bytes one UTF-16 code unit can need. */
const MAX_BYTES_PER_UNIT = 3;

/** What a body's owner (a Message) keeps of it: where its bytes are. */
export interface BodyRef {
  bodyChunk: Chunk | null;
  bodyOffset: number;
  bodyBytes: number;
  /** Its index in the chunk's holders; -1 for an empty body, FREED once freed. */
  bodySlot: number;
}

const FREED = -2;

/** The body `ref` holds. */
export function readBody(ref: BodyRef): string {
  const chunk = ref.bodyChunk;
  if (chunk !== null) return chunk.buf.toString('utf8', ref.bodyOffset, ref.bodyOffset + ref.bodyBytes);
  // A bug, not a client's error: what reads a body must do so before the message is deleted.
  if (ref.bodySlot === FREED) throw new Error('message body read after the message was deleted');
  return '';
}

/** Gives back the space of `ref`'s body (its message left its queue); a second call does nothing. */
export function freeBody(ref: BodyRef): void {
  const chunk = ref.bodyChunk;
  if (chunk !== null) chunk.store.free(ref, chunk);
  else ref.bodySlot = FREED;
}

export class Chunk {
  /** Bytes written so far: the next body goes here. */
  used = 0;
  /** Bytes of bodies not yet freed. */
  live = 0;
  /** Whose bodies are here, by slot; null once freed (a compaction needs to find the rest). */
  readonly holders: (BodyRef | null)[] = [];

  constructor(
    readonly store: Bodies,
    readonly buf: Buffer,
  ) {}
}

export class Bodies {
  private current: Chunk | null = null;
  private readonly spares: Chunk[] = [];
  /** Bytes of the chunks in use: live bodies plus the space not yet reclaimed. */
  allocatedBytes = 0;
  /** Bytes of bodies not yet freed. */
  liveBytes = 0;
  chunks = 0;

  /** Stores `body` for `ref`, which must hold none (a new message). */
  put(ref: BodyRef, body: string): void {
    if (body.length === 0) {
      ref.bodyChunk = null;
      ref.bodyOffset = 0;
      ref.bodyBytes = 0;
      ref.bodySlot = -1;
      return;
    }
    let room = body.length * MAX_BYTES_PER_UNIT;
    if (room >= OWN_CHUNK_BYTES) {
      room = Buffer.byteLength(body, 'utf8');
      if (room >= OWN_CHUNK_BYTES) {
        const own = this.newChunk(room);
        this.append(own, ref, body);
        return;
      }
    }
    this.append(this.withRoom(room), ref, body);
  }

  /** Gives back the space of `ref`'s body, which is in one of this store's chunks. */
  free(ref: BodyRef, chunk: Chunk): void {
    chunk.holders[ref.bodySlot] = null;
    ref.bodyChunk = null;
    ref.bodySlot = FREED;
    chunk.live -= ref.bodyBytes;
    this.liveBytes -= ref.bodyBytes;
    if (chunk === this.current) {
      // Nothing left in it: start it over instead of leaving the written part unused.
      if (chunk.live === 0) {
        chunk.used = 0;
        chunk.holders.length = 0;
      }
      return;
    }
    if (chunk.live === 0) this.drop(chunk);
    else if (chunk.live * 4 <= chunk.buf.length) this.compact(chunk);
  }

  private append(chunk: Chunk, ref: BodyRef, body: string): void {
    const bytes = chunk.buf.write(body, chunk.used, 'utf8');
    ref.bodyChunk = chunk;
    ref.bodyOffset = chunk.used;
    ref.bodyBytes = bytes;
    ref.bodySlot = chunk.holders.length;
    chunk.holders.push(ref);
    chunk.used += bytes;
    chunk.live += bytes;
    this.liveBytes += bytes;
  }

  /** The current chunk, if it has `bytes` (< OWN_CHUNK_BYTES) to spare, or a new one. */
  private withRoom(bytes: number): Chunk {
    const full = this.current;
    if (full !== null) {
      if (full.used + bytes <= full.buf.length) return full;
      this.current = null;
      // Dropped if empty; if mostly free, what it holds moves to a new current chunk, which
      // then has at least three quarters free.
      if (full.live === 0) this.drop(full);
      else if (full.live * 4 <= full.buf.length) this.compact(full);
      const next = this.current as Chunk | null;
      if (next !== null && next.used + bytes <= next.buf.length) return next;
    }
    return (this.current = this.newChunk(CHUNK_BYTES));
  }

  /** Moves what `chunk` still holds to the current chunk; `chunk` is then dropped. */
  private compact(chunk: Chunk): void {
    for (const ref of chunk.holders) {
      if (ref === null) continue;
      const bytes = ref.bodyBytes;
      const target = this.withRoom(bytes);
      chunk.buf.copy(target.buf, target.used, ref.bodyOffset, ref.bodyOffset + bytes);
      ref.bodyChunk = target;
      ref.bodyOffset = target.used;
      ref.bodySlot = target.holders.length;
      target.holders.push(ref);
      target.used += bytes;
      target.live += bytes;
    }
    // The bytes moved, so the live total did not change; the source's count goes with it.
    chunk.live = 0;
    chunk.holders.length = 0;
    this.drop(chunk);
  }

  /** Bytes of emptied chunks kept for reuse. */
  get spareBytes(): number {
    return this.spares.length * CHUNK_BYTES;
  }

  private newChunk(bytes: number): Chunk {
    this.chunks++;
    this.allocatedBytes += bytes;
    if (bytes === CHUNK_BYTES) {
      const spare = this.spares.pop();
      if (spare !== undefined) return spare;
    }
    // Outside Node's shared pool: a chunk's memory goes back when it is dropped.
    return new Chunk(this, Buffer.allocUnsafeSlow(bytes));
  }

  /** A chunk that holds no body any more (live 0). */
  private drop(chunk: Chunk): void {
    this.chunks--;
    this.allocatedBytes -= chunk.buf.length;
    if (chunk.buf.length === CHUNK_BYTES && this.spares.length < MAX_SPARE_CHUNKS) {
      chunk.used = 0;
      chunk.holders.length = 0;
      this.spares.push(chunk);
    }
  }
}
