export interface ApiResponse<T = any> {
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
  async function request<T = any>(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
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
    get: <T = any>(path: string, opts?: RequestOptions) => request<T>("GET", path, opts),
    post: <T = any>(path: string, body?: unknown, opts?: RequestOptions) => request<T>("POST", path, { ...opts, body }),
    patch: <T = any>(path: string, body?: unknown, opts?: RequestOptions) => request<T>("PATCH", path, { ...opts, body }),
    delete: <T = any>(path: string, opts?: RequestOptions) => request<T>("DELETE", path, opts),
  };
}
export type Api = ReturnType<typeof api>;
