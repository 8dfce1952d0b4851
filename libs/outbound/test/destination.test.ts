import { describe, expect, it } from "vitest";
import { destinationRefusal } from "../src/destination.js";

// The guard asked ahead, when an endpoint's URL is set: what every call would be refused is
// refused then. Names are resolved as the guard resolves them when it dials (the system's
// resolver, /etc/hosts included); `localhost` is loopback on every host the tests run on.
const guarded = { allowHttp: false, allowPrivate: false };
const relaxed = { allowHttp: true, allowPrivate: true };

describe("destinationRefusal", () => {
  it("when the host is a blocked literal address, then it is refused with its class, whatever the form", async () => {
    const cases: Array<[string, string]> = [
      ["https://127.0.0.1/hook", "loopback"],
      ["https://[::1]/", "loopback"],
      ["https://10.1.2.3/", "private"],
      ["https://[::ffff:192.168.0.1]/", "private"],
      ["https://169.254.169.254/latest/meta-data/", "metadata"],
      ["https://100.64.0.1/", "cgnat"],
      ["https://0.0.0.0/", "unspecified"],
    ];
    for (const [url, reason] of cases) {
      const r = await destinationRefusal(url, guarded);
      expect(r, url).toEqual({ reason, message: expect.stringMatching(/^points at an? .+ address \(.+\): webhooks are delivered to public addresses only$/) });
    }
  });

  it("when a name resolves only to blocked addresses, then it is refused naming the host", async () => {
    expect(await destinationRefusal("https://localhost:8443/hook", guarded)).toEqual({
      reason: "loopback",
      message: "points at localhost, which resolves only to loopback addresses: webhooks are delivered to public addresses only",
    });
  });

  it("when a name is under localhost, then it is refused without waiting for a lookup (a process too busy to see the answer in time still refuses)", async () => {
    for (const host of ["localhost", "api.localhost", "LOCALHOST."]) {
      // No time at all for a lookup: only a rule that needs none can refuse.
      expect(await destinationRefusal(`https://${host}/hook`, guarded, 0), host).toMatchObject({ reason: "loopback" });
    }
    expect(await destinationRefusal("https://localhost.example/hook", guarded, 0)).toBeNull();
  });

  it("when the name does not resolve, then it is not refused (it may be set up later; every call checks again)", async () => {
    expect(await destinationRefusal("https://hooks.not-yet.invalid/", guarded)).toBeNull();
  });

  it("when private targets are allowed, then loopback and private pass and a metadata address is still refused", async () => {
    expect(await destinationRefusal("http://127.0.0.1:9000/hook", relaxed)).toBeNull();
    expect(await destinationRefusal("https://localhost/", relaxed)).toBeNull();
    expect(await destinationRefusal("https://10.0.0.1/", relaxed)).toBeNull();
    expect(await destinationRefusal("https://169.254.169.254/", relaxed)).toMatchObject({ reason: "metadata" });
  });

  it("when a URL rule is broken, then its rule is the reason", async () => {
    expect(await destinationRefusal("http://hooks.example.com/", guarded)).toMatchObject({ reason: "scheme" });
    expect(await destinationRefusal("https://u:p@hooks.example.com/", guarded)).toMatchObject({ reason: "userinfo" });
  });
});
