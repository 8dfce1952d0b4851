/**
 * A parsed JSON response body read without a declared shape: tests read `r.body.data[0].id` and
 * the expectation on the value is the check. This is the one `any` of the code base, in test code
 * only and said out loud here rather than laundered through another type; a test that wants the
 * compiler to check a shape passes it, as in `api.get<Task>(path)`. (`unknown` here would need a
 * type at some 360 call sites that assert on the value anyway.)
 */
// biome-ignore lint/suspicious/noExplicitAny: the loose body type of the test HTTP client, above.
export type JsonBody = any;

export interface ApiResponse<T = JsonBody> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  /** Sent as is, with no JSON encoding or content type added. */
  rawBody?: string;
  headers?: Record<string, string>;
}

/**
 * A tiny HTTP client for tests: JSON in and out, never throws on a status. Failed assertions
 * print `text`, so a test names the response body it got.
 */
export function api(baseUrl: string) {
  async function request<T = JsonBody>(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.token !== undefined) headers["authorization"] = `Bearer ${opts.token}`;
    let body: string | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] ??= "application/json";
    }
    const res = await fetch(new URL(path, baseUrl), { method, headers, ...(body === undefined ? {} : { body }) });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }
  return {
    request,
    get: <T = JsonBody>(path: string, opts?: RequestOptions) => request<T>("GET", path, opts),
    post: <T = JsonBody>(path: string, body?: unknown, opts?: RequestOptions) => request<T>("POST", path, { ...opts, body }),
    patch: <T = JsonBody>(path: string, body?: unknown, opts?: RequestOptions) => request<T>("PATCH", path, { ...opts, body }),
    delete: <T = JsonBody>(path: string, opts?: RequestOptions) => request<T>("DELETE", path, opts),
  };
}
export type Api = ReturnType<typeof api>;
