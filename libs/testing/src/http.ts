/**
 * The one `any` of the code base, in test code only and said out loud: tests read
 * `r.body.data[0].id` and the expectation on the value is the check. A test wanting a checked
 * shape passes it, as in `api.get<Task>(path)`.
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
  rawBody?: string;
  headers?: Record<string, string>;
}

/** Never throws on a status; failed assertions print `text`, so a test names the body it got. */
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
    put: <T = JsonBody>(path: string, body?: unknown, opts?: RequestOptions) => request<T>("PUT", path, { ...opts, body }),
    patch: <T = JsonBody>(path: string, body?: unknown, opts?: RequestOptions) => request<T>("PATCH", path, { ...opts, body }),
    delete: <T = JsonBody>(path: string, opts?: RequestOptions) => request<T>("DELETE", path, opts),
  };
}
export type Api = ReturnType<typeof api>;
