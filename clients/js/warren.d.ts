// Types for warren.js, Warren's JavaScript client (the protocol: Warren's docs/protocol.md).

/** The canonical envelope. */
export interface Envelope {
  v: 1;
  id: string;
  route: string;
  type: string;
  from: string;
  via: "ws" | "poll" | "amqp";
  ts: number;
  body: unknown;
  cid?: string;
  transient?: boolean;
  headers?: Record<string, string>;
}

/** An error Warren answered (its `code`: forbidden, bad_route, unavailable, …), or the client's own `closed` / `aborted`. */
export class WarrenError extends Error {
  readonly code: string;
  /** The HTTP status, for an error answered over HTTP. */
  readonly status?: number;
  /** What the error is about, when Warren names it: a subscription's id, a publish's cid. */
  readonly ref?: string;
}

export interface ConnectOptions {
  /** Warren's http(s) base URL; in a browser, the page's origin by default. */
  url?: string;
  /** A JWT (token mode). */
  token?: string;
  /** The user (auth.mode = "none" only). */
  user?: string;
  /** Selects the inbox (default "default"). Connections that share a device share its inbox:
   *  each inbox message reaches one of them. Give each tab or process that must see every
   *  message its own device (README, "A device is the unit of inbox delivery"). */
  device?: string;
  /** Asked for a fresh token when Warren closes with 4401 or answers 401. */
  getToken?: () => Promise<string> | string;
  /**
   * Default ["websocket", "polling"]: the WebSocket, long-polling when it cannot open. "sse"
   * reads live subscriptions (without presence) from a Server-Sent Events stream where the
   * WebSocket cannot open (before polling, which takes over for an inbox or presence).
   */
  transports?: Array<"websocket" | "sse" | "polling">;
  /** A WebSocket implementation where there is no global one. */
  WebSocket?: unknown;
  fetch?: typeof fetch;
  /** The WebSocket endpoint when it is not `<url>/v1/ws`. */
  wsUrl?: string;
  /** Reconnect backoff in ms (full jitter): default {initial: 250, max: 15000}. */
  backoff?: { initial?: number; max?: number };
  /** Seconds a long-poll waits (default 25). */
  pollWait?: number;
  /** How often a long-polling client tries the WebSocket again (ms, default 30000). */
  retryWebSocketMs?: number;
  /** A WebSocket silent this long is pinged (`{"op":"ping"}`; ms, default 25000). */
  heartbeatMs?: number;
  /**
   * How long a silent connection is waited for (ms, default 20000): a WebSocket still silent this
   * long after its ping, or whose handshake is unanswered this long, is lost (and reconnected);
   * an HTTP request unanswered this long (a long-poll: this long past its wait) fails `unavailable`.
   */
  timeoutMs?: number;
}

export interface SubscribeOptions {
  mode?: "live" | "inbox";
  /** Announce the user on this (concrete, live) route. */
  presence?: boolean;
  /** The subscription's id (default s1, s2, …). */
  id?: string;
  /** A live subscription starts with what came after this envelope id (recovery from the store). */
  since?: string;
}

export interface DeliveryInfo {
  sub: Subscription;
  /** RabbitMQ delivered it before (an inbox delivery not acknowledged then). */
  redelivered: boolean;
}

/** Called per delivery, one at a time per subscription; an inbox delivery is acknowledged once it returned (or its promise resolved). */
export type Handler = (env: Envelope, info: DeliveryInfo) => void | Promise<void>;

export interface Subscription {
  readonly id: string;
  readonly pattern: string;
  readonly mode: "live" | "inbox";
  /** A live subscription's last envelope id (or where it started): what it resubscribes `since`. */
  readonly lastId: string | null;
  /** Resolves once the subscription is in effect; rejects with Warren's error (forbidden, bad_route, …). */
  readonly ready: Promise<Subscription>;
  unsubscribe(): void;
}

/**
 * What `subscribe` returns: a promise of the subscription, resolved once it is in effect
 * (`await client.subscribe(…)`), rejected with Warren's error. It carries the subscription at
 * once too, to end it before it is in effect.
 */
export interface SubscribePromise extends Promise<Subscription> {
  readonly subscription: Subscription;
  readonly id: string;
  readonly pattern: string;
  readonly mode: "live" | "inbox";
  /** The promise itself. */
  readonly ready: Promise<Subscription>;
  unsubscribe(): void;
}

export interface PublishOptions {
  type?: string;
  headers?: Record<string, string>;
  transient?: boolean;
  /** The client id of the send (default: made by the client, kept across reconnects). */
  cid?: string;
}

export interface Conversation {
  route: string;
  last: Envelope;
  unread: number;
  read: string | null;
}

export type State = "connecting" | "open" | "closed";

export class WarrenClient {
  constructor(options?: ConnectOptions);
  readonly state: State;
  readonly transport: "websocket" | "sse" | "polling" | null;
  on(event: "state", fn: (state: State, detail?: { retryInMs: number }) => void): () => void;
  on(event: "transport", fn: (transport: "websocket" | "sse" | "polling") => void): () => void;
  /** A live subscription came back with everything it missed while away, delivered in order. */
  on(event: "recovered", fn: (sub: Subscription) => void): () => void;
  /** A live subscription came back but may have missed messages (`too_many`, `retention`, …): reload its history. */
  on(event: "reload", fn: (sub: Subscription, reason: "unknown_id" | "retention" | "not_stored" | "store_unavailable" | "too_many") => void): () => void;
  on(event: "error", fn: (error: WarrenError) => void): () => void;
  subscribe(pattern: string, handler: Handler): SubscribePromise;
  subscribe(pattern: string, options: SubscribeOptions, handler: Handler): SubscribePromise;
  unsubscribe(sub: Subscription | SubscribePromise): void;
  /** Resolves with the envelope id once the broker confirmed. */
  publish(route: string, body: unknown, options?: PublishOptions): Promise<string>;
  /** Several routes, all or none: resolves with one id per route. */
  publish(routes: string[], body: unknown, options?: PublishOptions): Promise<string[]>;
  history(route: string, options?: { before?: string; limit?: number }): Promise<{ route: string; messages: Envelope[]; more: boolean }>;
  conversations(): Promise<Conversation[]>;
  read(route: string, id: string): Promise<void>;
  presence(route: string): Promise<string[]>;
  close(): void;
}

export function connect(options?: ConnectOptions): WarrenClient;

/** Whether a topic pattern (`*` one word, `#` zero or more) matches a route, as RabbitMQ's topic exchange does. */
export function patternMatches(pattern: string, route: string): boolean;
