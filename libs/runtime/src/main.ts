import { loadConfigOrExit, runMain } from "@tasksvc/config";
import { createLogger } from "@tasksvc/logger";
import { initTracing } from "@tasksvc/telemetry";
import type { BaseConfig, ServiceDefinition } from "./definition.js";
import { startService } from "./start.js";

/** The stop may take SHUTDOWN_DELAY plus 10 s before the process is forced out. */
export async function main<C extends BaseConfig, R>(def: ServiceDefinition<C, R>): Promise<void> {
  const cfg = loadConfigOrExit(def.config, undefined, { service: def.name });
  const log = createLogger({ service: def.name, level: cfg.LOG_LEVEL, format: cfg.LOG_FORMAT });
  const tracing = await initTracing({ serviceName: def.name, endpoint: cfg.OTEL_EXPORTER_OTLP_ENDPOINT });
  await runMain(
    def.name,
    async () => {
      const running = await startService(def, cfg, log);
      return {
        async stop() {
          try {
            await running.stop();
          } finally {
            await tracing.shutdown();
          }
        },
      };
    },
    log,
    cfg.SHUTDOWN_DELAY + 10_000,
  );
}
