/** Append only: a code, once published, keeps its meaning. */
export const ERROR_CATALOG = {
  validation_failed: { status: 400, title: "Validation failed" },
  malformed_request: { status: 400, title: "Malformed request" },
  // Narrow it rather than retry it.
  query_too_expensive: { status: 400, title: "Query too expensive" },
  missing_credentials: { status: 401, title: "Missing credentials" },
  invalid_api_key: { status: 401, title: "Invalid API key" },
  invalid_token: { status: 401, title: "Invalid access token" },
  insufficient_scope: { status: 403, title: "Insufficient scope" },
  feature_not_enabled: { status: 403, title: "Feature not enabled" },
  link_invalid: { status: 403, title: "Link invalid or expired" },
  resource_not_found: { status: 404, title: "Resource not found" },
  route_not_found: { status: 404, title: "Route not found" },
  method_not_allowed: { status: 405, title: "Method not allowed" },
  request_timeout: { status: 408, title: "Request timeout" },
  idempotency_in_progress: { status: 409, title: "Idempotent request in progress" },
  delivery_already_pending: { status: 409, title: "Delivery already pending" },
  // A replay is the way.
  delivery_not_pending: { status: 409, title: "Delivery not pending" },
  dependency_cycle: { status: 409, title: "Dependency cycle" },
  upload_already_received: { status: 409, title: "Upload already received" },
  limit_reached: { status: 409, title: "Limit reached" },
  // Make another member an owner first.
  last_owner: { status: 409, title: "Last owner" },
  already_member: { status: 409, title: "Already a member" },
  precondition_failed: { status: 412, title: "Precondition failed" },
  payload_too_large: { status: 413, title: "Payload too large" },
  unsupported_media_type: { status: 415, title: "Unsupported media type" },
  idempotency_key_reused: { status: 422, title: "Idempotency key reused" },
  rate_limited: { status: 429, title: "Rate limited" },
  quota_exhausted: { status: 429, title: "Quota exhausted" },
  headers_too_large: { status: 431, title: "Request header fields too large" },
  // The scope is there; the user's relation to the object is not (another's comment).
  not_permitted: { status: 403, title: "Not permitted" },
  // Restore the parent first: a subtask never comes back under a task still in the trash.
  parent_in_trash: { status: 409, title: "Parent in trash" },
  internal_error: { status: 500, title: "Internal error" },
  service_unavailable: { status: 503, title: "Service unavailable" },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOG;
export const ERROR_CODES = Object.keys(ERROR_CATALOG) as ErrorCode[];
