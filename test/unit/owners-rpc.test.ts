import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Socket, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, mock, test } from 'node:test';
import {
  decodePayload,
  encodeFrame,
  FrameReader,
  FrameType,
  MAGIC,
  MAX_FRAME,
  RpcProtocolError,
  type Frame,
} from '../../src/owners/codec.js';
import {
  RpcCancel,
  RpcClient,
  RpcLostError,
  RpcRemoteError,
  RpcServer,
  RpcUnsentError,
  type RpcAddress,
  type RpcHandler,
  type RpcSignal,
} from '../../src/owners/rpc.js';

const dir = mkdtempSync(join(tmpdir(), 'owners-rpc-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let sockets = 0;

const TIMEOUT = 30_000;

const transports: { name: string; address: () => RpcAddress }[] = [
  { name: 'TCP', address: () => ({ host: '127.0.0.1', port: 0 }) },
  { name: 'a Unix socket', address: () => ({ path: join(dir, `s${++sockets}.sock`) }) },
];

/** A server of `handle` listening, a client to it, and how to stop both. */
async function pair(
  listenOn: RpcAddress,
  handle: RpcHandler['handle'],
): Promise<{ server: RpcServer; client: RpcClient; address: RpcAddress; stop: () => Promise<void> }> {
  const server = new RpcServer({ handle });
  const address = await server.listen(listenOn);
  const client = new RpcClient(address);
  return {
    server,
    client,
    address,
    stop: async () => {
      await client.close();
      await server.close();
    },
  };
}

const echo: RpcHandler['handle'] = (payload) => Promise.resolve(payload);

/** A promise and its resolve, for a handler to wait on or to say it has started. */
function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

/** A listening server that speaks the opening magic (or not) and does what `onSocket` says. */
async function fakePeer(
  onSocket: (socket: Socket, frames: Frame[]) => void,
  magic: Buffer = MAGIC,
): Promise<{ server: Server; address: RpcAddress }> {
  const server = createServer((socket) => {
    socket.write(magic);
    const frames: Frame[] = [];
    const reader = new FrameReader((frame) => {
      frames.push({ ...frame, bytes: Buffer.from(frame.bytes) });
      socket.emit('frame');
    });
    socket.on('data', (chunk: Buffer) => reader.push(chunk));
    socket.on('error', () => undefined);
    onSocket(socket, frames);
  });
  server.listen({ host: '127.0.0.1', port: 0 });
  await once(server, 'listening');
  const a = server.address();
  assert.ok(a !== null && typeof a === 'object');
  return { server, address: { host: a.address, port: a.port } };
}

async function closeServer(server: Server): Promise<void> {
  server.close();
  await once(server, 'close');
}

for (const { name, address } of transports) {
  describe(`Over ${name}`, () => {
    test('Given a server, when a client calls it, then the handler’s answer comes back', async () => {
      const { client, stop } = await pair(address(), (p) =>
        Promise.resolve(p === 'nothing' ? undefined : { got: p, n: 42 }),
      );
      try {
        assert.deepEqual(
          await client.call({ action: 'SendMessage', body: 'héllo ✓' }, { timeoutMs: TIMEOUT }),
          {
            got: { action: 'SendMessage', body: 'héllo ✓' },
            n: 42,
          },
        );
        assert.deepEqual(await client.call(undefined, { timeoutMs: TIMEOUT }), { n: 42 });
        assert.equal(await client.call('nothing', { timeoutMs: TIMEOUT }), undefined);
      } finally {
        await stop();
      }
    });

    test('Given 1000 calls made in one turn, when the handlers answer out of order, then each call gets its own answer, all sent in one write', async () => {
      const waiting: { i: number; open: (v: unknown) => void }[] = [];
      const all = gate();
      const { client, stop } = await pair(address(), (p) => {
        const g = gate<unknown>();
        waiting.push({ i: (p as { i: number }).i, open: g.open });
        if (waiting.length === 1000) all.open();
        return g.promise;
      });
      const write = mock.method(Socket.prototype, 'write');
      try {
        const calls = Array.from({ length: 1000 }, (_, i) => client.call({ i }, { timeoutMs: TIMEOUT }));
        await all.promise;
        const requestWrites = write.mock.calls.filter((c) => {
          const chunk = c.arguments[0] as unknown;
          return Buffer.isBuffer(chunk) && chunk.length > 8 && chunk[8] === FrameType.REQUEST;
        });
        assert.equal(requestWrites.length, 1);
        for (const w of waiting.reverse()) w.open({ twice: w.i * 2 });
        const answers = await Promise.all(calls);
        assert.deepEqual(
          answers,
          Array.from({ length: 1000 }, (_, i) => ({ twice: i * 2 })),
        );
      } finally {
        write.mock.restore();
        await stop();
      }
    });

    test('Given binary values anywhere in a payload, when it goes there and back, then each is the same type with the same bytes, and undefined fields are dropped', async () => {
      let seen: unknown;
      const { client, stop } = await pair(address(), (p) => {
        seen = p;
        return Promise.resolve(p);
      });
      try {
        const bytes = Buffer.from([0, 1, 2, 0xfe, 0xff, 0x80]);
        const payload = {
          MessageAttributes: {
            blob: { DataType: 'Binary', BinaryValue: bytes },
            list: { DataType: 'Binary', BinaryListValues: [new Uint8Array([9, 8, 7]), Buffer.alloc(0)] },
          },
          nested: [[{ deep: Buffer.from('ünïcode', 'utf8') }]],
          text: 'AAEC',
          gone: undefined,
        };
        const expected = {
          MessageAttributes: payload.MessageAttributes,
          nested: payload.nested,
          text: 'AAEC',
        };
        const back = (await client.call(payload, { timeoutMs: TIMEOUT })) as typeof payload;
        assert.deepStrictEqual(seen, expected);
        assert.deepStrictEqual(back, expected);
        assert.ok(Buffer.isBuffer(back.MessageAttributes.blob.BinaryValue));
        const list = back.MessageAttributes.list.BinaryListValues;
        assert.ok(!Buffer.isBuffer(list[0]) && list[0] instanceof Uint8Array);
        // The caller's payload is left as it was.
        assert.equal(payload.MessageAttributes.blob.BinaryValue, bytes);
        assert.deepStrictEqual(await client.call(bytes, { timeoutMs: TIMEOUT }), bytes);
        // A key named __proto__ on the way to a binary value stays an own field.
        const proto = JSON.parse('{"__proto__": {"x": 1}}') as Record<string, Record<string, unknown>>;
        proto['__proto__']!.b = Buffer.from([1]);
        const protoBack = (await client.call(proto, { timeoutMs: TIMEOUT })) as Record<string, unknown>;
        assert.ok(Object.hasOwn(protoBack, '__proto__'));
        assert.deepStrictEqual(Object.getOwnPropertyDescriptor(protoBack, '__proto__')?.value, {
          x: 1,
          b: Buffer.from([1]),
        });
        assert.equal((Object.prototype as Record<string, unknown>).b, undefined);
      } finally {
        await stop();
      }
    });

    test('Given a 3 MiB payload, when it goes there and back, then it arrives whole', async () => {
      const { client, stop } = await pair(address(), echo);
      try {
        // Multi-byte characters, so that characters and bytes differ, and a frame spans many reads.
        const body = 'ab€\n"'.repeat((3 * 1024 * 1024) / 8);
        const entries = [
          { Id: '1', MessageBody: body },
          { Id: '2', MessageBody: 'small' },
        ];
        const small = client.call({ n: 1 }, { timeoutMs: TIMEOUT });
        assert.deepEqual(await client.call({ Entries: entries }, { timeoutMs: TIMEOUT }), {
          Entries: entries,
        });
        assert.deepEqual(await small, { n: 1 });
      } finally {
        await stop();
      }
    });

    test('Given a handler that throws, when it is called, then the call rejects with an RpcRemoteError of its name and message', async () => {
      const { client, stop } = await pair(address(), (p) => {
        if (p === 'sync') throw new TypeError('thrown at once');
        if (p === 'ok') return Promise.resolve('ok');
        return Promise.reject(new RangeError('shard 7 is not here'));
      });
      try {
        await assert.rejects(client.call('async', { timeoutMs: TIMEOUT }), (e: unknown) => {
          assert.ok(e instanceof RpcRemoteError);
          assert.equal(e.remoteName, 'RangeError');
          assert.equal(e.remoteMessage, 'shard 7 is not here');
          return true;
        });
        await assert.rejects(client.call('sync', { timeoutMs: TIMEOUT }), {
          name: 'RpcRemoteError',
          remoteName: 'TypeError',
          remoteMessage: 'thrown at once',
        });
        // The connection is still good.
        assert.equal(await client.call('ok', { timeoutMs: TIMEOUT }), 'ok');
      } finally {
        await stop();
      }
    });

    test('Given no server at the address, when a client calls, then the call rejects with RpcUnsentError', async () => {
      const server = new RpcServer({ handle: echo });
      const gone = await server.listen(address());
      await server.close();
      const client = new RpcClient(gone);
      try {
        await assert.rejects(client.call('x', { timeoutMs: TIMEOUT }), RpcUnsentError);
      } finally {
        await client.close();
      }
    });

    test('Given a call that times out, when it had been written, then it rejects with RpcLostError and the handler’s signal aborts', async () => {
      const started = gate();
      const aborted = gate<unknown>();
      const { client, stop } = await pair(address(), (_p, signal) => {
        signal.addEventListener('abort', () => aborted.open(signal.reason));
        started.open();
        return new Promise(() => undefined);
      });
      mock.timers.enable({ apis: ['setTimeout'] });
      try {
        const call = client.call('slow', { timeoutMs: 1000 });
        await started.promise;
        mock.timers.tick(1000);
        await assert.rejects(call, RpcLostError);
        assert.equal(((await aborted.promise) as Error).name, 'RpcConnectionClosed');
      } finally {
        mock.timers.reset();
        await stop();
      }
    });

    test('Given calls of different timeouts, when the shorter one, made last, is due, then only it is given up, and the other when its own is', async () => {
      let started = 0;
      const both = gate();
      const { client, stop } = await pair(address(), () => {
        if (++started === 2) both.open();
        return new Promise(() => undefined);
      });
      mock.timers.enable({ apis: ['setTimeout'] });
      try {
        const long = client.call('long', { timeoutMs: 2000 });
        const short = client.call('short', { timeoutMs: 1000 });
        let longDone = false;
        long.catch(() => undefined).finally(() => (longDone = true));
        await both.promise;
        mock.timers.tick(1000);
        await assert.rejects(short, RpcLostError);
        assert.equal(longDone, false);
        mock.timers.tick(1000);
        await assert.rejects(long, RpcLostError);
      } finally {
        mock.timers.reset();
        await stop();
      }
    });

    test('Given a call in flight, when its signal aborts, then the handler’s signal aborts and the call rejects with the reason', async () => {
      const started = gate();
      const handlerAborted = gate();
      const { client, stop } = await pair(address(), (p, signal) => {
        if (p !== 'long poll') return Promise.resolve(p);
        started.open();
        return new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            handlerAborted.open();
            reject(signal.reason ?? new Error('aborted'));
          });
        });
      });
      try {
        const ac = new AbortController();
        const call = client.call('long poll', { timeoutMs: TIMEOUT, signal: ac.signal });
        await started.promise;
        const reason = new Error('the HTTP client went away');
        ac.abort(reason);
        await assert.rejects(call, (e) => e === reason);
        await handlerAborted.promise;
        // Aborted before the call: nothing is sent, it rejects with the reason.
        await assert.rejects(
          client.call('x', { timeoutMs: TIMEOUT, signal: ac.signal }),
          (e) => e === reason,
        );
        assert.equal(await client.call('after', { timeoutMs: TIMEOUT }), 'after');
      } finally {
        await stop();
      }
    });

    test('Given a server restarted at the same address, when the client calls again, then it connects again', async () => {
      let generation = 1;
      const listenOn = address();
      const first = new RpcServer({ handle: () => Promise.resolve(generation) });
      const at = await first.listen(listenOn);
      const client = new RpcClient(at);
      try {
        assert.equal(await client.call('x', { timeoutMs: TIMEOUT }), 1);
        await first.close();
        generation = 2;
        const second = new RpcServer({ handle: () => Promise.resolve(generation) });
        await second.listen(at);
        try {
          assert.equal(await client.call('x', { timeoutMs: TIMEOUT }), 2);
          assert.equal(second.connections, 1);
        } finally {
          await client.close();
          await second.close();
        }
      } finally {
        await client.close();
      }
    });

    test('Given a call in flight, when the server closes, then its reply still comes, later calls are unsent, and close waits for it', async () => {
      const started = gate();
      const release = gate<string>();
      let signal: RpcSignal | undefined;
      const { server, client, stop } = await pair(address(), (p, s) => {
        if (p !== 'slow') return Promise.resolve(p);
        signal = s;
        started.open();
        return release.promise;
      });
      try {
        const slow = client.call('slow', { timeoutMs: TIMEOUT });
        await started.promise;
        let closed = false;
        const closing = server.close().then(() => (closed = true));
        await assert.rejects(client.call('late', { timeoutMs: TIMEOUT }), RpcUnsentError);
        assert.equal(closed, false);
        release.open('done');
        assert.equal(await slow, 'done');
        await closing;
        assert.equal(signal?.aborted, false);
      } finally {
        await stop();
      }
    });
  });
}

describe('Against a peer that misbehaves', () => {
  test('Given a call written, when the server’s socket is destroyed before the reply, then it rejects with RpcLostError', async () => {
    const { server, address } = await fakePeer((socket, frames) => {
      socket.on('frame', () => {
        if (frames.some((f) => f.type === FrameType.REQUEST)) socket.destroy();
      });
    });
    const client = new RpcClient(address);
    try {
      await assert.rejects(client.call('x', { timeoutMs: TIMEOUT }), RpcLostError);
    } finally {
      await client.close();
      await closeServer(server);
    }
  });

  test('Given a peer that accepts but never answers the magic, when a call times out, then it is unsent', async () => {
    const connected = gate();
    const { server, address } = await fakePeer(() => connected.open(), Buffer.alloc(0));
    const client = new RpcClient(address);
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const call = client.call('x', { timeoutMs: 1000 });
      await connected.promise;
      mock.timers.tick(1000);
      await assert.rejects(call, RpcUnsentError);
    } finally {
      mock.timers.reset();
      await client.close();
      await closeServer(server);
    }
  });

  test('Given a peer that sends a frame longer than the cap, when a call waits, then the connection closes and the call is lost', async () => {
    const { server, address } = await fakePeer((socket) => {
      socket.on('frame', () => {
        const head = Buffer.alloc(4);
        head.writeUInt32BE(MAX_FRAME + 1);
        socket.write(head);
      });
    });
    const client = new RpcClient(address);
    try {
      await assert.rejects(client.call('x', { timeoutMs: TIMEOUT }), (e: unknown) => {
        assert.ok(e instanceof RpcLostError);
        assert.ok(e.cause instanceof RpcProtocolError);
        return true;
      });
    } finally {
      await client.close();
      await closeServer(server);
    }
  });

  test('Given a reply that does not decode, when it comes, then the connection closes and the call is lost at once', async () => {
    const { server, address } = await fakePeer((socket, frames) => {
      socket.on('frame', () => {
        const reply = encodeFrame(FrameType.REPLY, frames[0]!.id, 'x');
        reply[reply.length - 1] = '{'.charCodeAt(0);
        socket.write(reply);
      });
    });
    const client = new RpcClient(address);
    try {
      await assert.rejects(client.call('x', { timeoutMs: TIMEOUT }), (e: unknown) => {
        assert.ok(e instanceof RpcLostError);
        assert.ok(e.cause instanceof RpcProtocolError);
        return true;
      });
    } finally {
      await client.close();
      await closeServer(server);
    }
  });

  test('Given a service that does not speak the protocol, when a client calls it, then the call is unsent', async () => {
    let requests = 0;
    const { server, address } = await fakePeer((socket) => {
      socket.on('frame', () => requests++);
    }, Buffer.from('HTTP/1.1 400 Bad Request\r\n\r\n'));
    const client = new RpcClient(address);
    try {
      await assert.rejects(client.call('x', { timeoutMs: TIMEOUT }), RpcUnsentError);
      assert.equal(requests, 0);
    } finally {
      await client.close();
      await closeServer(server);
    }
  });

  test('Given calls pending, when the client closes, then written ones are lost and unwritten ones unsent', async () => {
    const { server, address } = await fakePeer((socket) => socket.on('frame', () => socket.emit('got')));
    const got = new Promise((resolve) => server.once('connection', (s: Socket) => s.once('got', resolve)));
    const client = new RpcClient(address);
    try {
      const written = client.call('x', { timeoutMs: TIMEOUT });
      await got;
      const unwritten = client.call('y', { timeoutMs: TIMEOUT });
      const closing = client.close();
      await assert.rejects(written, RpcLostError);
      await assert.rejects(unwritten, RpcUnsentError);
      await closing;
      await assert.rejects(client.call('z', { timeoutMs: TIMEOUT }), RpcUnsentError);
    } finally {
      await closeServer(server);
    }
  });
});

describe('FrameReader', () => {
  const magicAnd = (...frames: Buffer[]): Buffer => Buffer.concat([MAGIC, ...frames]);
  const collect = (): { frames: { id: number; type: number; payload: unknown }[]; reader: FrameReader } => {
    const frames: { id: number; type: number; payload: unknown }[] = [];
    const reader = new FrameReader((f) =>
      frames.push({ id: f.id, type: f.type, payload: f.type === FrameType.CANCEL ? null : decodePayload(f) }),
    );
    return { frames, reader };
  };
  const stream = magicAnd(
    encodeFrame(FrameType.REQUEST, 1, { a: 'x'.repeat(300) }),
    encodeFrame(FrameType.CANCEL, 2),
    encodeFrame(FrameType.REPLY, 3, { b: Buffer.from([1, 2, 3]) }),
    encodeFrame(FrameType.REQUEST, 0xffffffff, 'ü'.repeat(70_000)),
  );
  const expected = [
    { id: 1, type: FrameType.REQUEST, payload: { a: 'x'.repeat(300) } },
    { id: 2, type: FrameType.CANCEL, payload: null },
    { id: 3, type: FrameType.REPLY, payload: { b: Buffer.from([1, 2, 3]) } },
    { id: 0xffffffff, type: FrameType.REQUEST, payload: 'ü'.repeat(70_000) },
  ];

  for (const size of [1, 3, 7, 4096, stream.length]) {
    test(`Given frames cut into chunks of ${size} bytes, when they are pushed, then each frame comes out once, whole`, () => {
      const { frames, reader } = collect();
      for (let at = 0; at < stream.length; at += size) reader.push(stream.subarray(at, at + size));
      assert.deepStrictEqual(frames, expected);
    });
  }

  test('Given a wrong magic, a length out of bounds or an unknown type, when pushed, then it throws RpcProtocolError', () => {
    assert.throws(() => collect().reader.push(Buffer.from('GET / HTTP/1.1\r\n')), RpcProtocolError);
    const long = Buffer.alloc(4);
    long.writeUInt32BE(MAX_FRAME + 1);
    assert.throws(() => collect().reader.push(magicAnd(long)), RpcProtocolError);
    const short = Buffer.from([0, 0, 0, 2, 0, 0]);
    assert.throws(() => collect().reader.push(magicAnd(short)), RpcProtocolError);
    const unknown = encodeFrame(FrameType.CANCEL, 1);
    unknown[8] = 99;
    assert.throws(() => collect().reader.push(magicAnd(unknown)), RpcProtocolError);
  });
});

describe('RpcCancel', () => {
  test('Given listeners, when it aborts twice, then each runs once, one that throws does not stop the rest, and one added after never runs', () => {
    const cancel = new RpcCancel();
    const ran: string[] = [];
    const removed = (): void => void ran.push('removed');
    cancel.addEventListener('abort', () => {
      ran.push('first');
      throw new Error('a listener failed');
    });
    cancel.addEventListener('abort', removed);
    cancel.addEventListener('abort', () => void ran.push(`second: ${cancel.reason?.message}`));
    cancel.removeEventListener('abort', removed);
    // The listener's error is thrown on a microtask of its own: caught here, not by the runner.
    const deferred: (() => void)[] = [];
    const queued = mock.method(globalThis, 'queueMicrotask', (fn: () => void) => void deferred.push(fn));
    const reason = new Error('gone');
    try {
      cancel.abort(reason);
      cancel.abort(new Error('again'));
    } finally {
      queued.mock.restore();
    }
    cancel.addEventListener('abort', () => void ran.push('late'));
    assert.equal(cancel.aborted, true);
    assert.equal(cancel.reason, reason);
    assert.deepEqual(ran, ['first', 'second: gone']);
    assert.equal(deferred.length, 1);
    assert.throws(deferred[0]!, /a listener failed/);
  });
});
