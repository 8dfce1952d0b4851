-- Up Migration
-- The plan limit on webhook endpoints (set-limits --webhook-endpoints): like the other overrides,
-- null means the plan's default. Zero is refused as the other limits' zero is: an organization
-- that should have no endpoints is one without the outbound_webhooks entitlement.
alter table organizations add column webhook_endpoints integer check (webhook_endpoints > 0);
