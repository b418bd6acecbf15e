import { describe, expect, it } from "vitest";

import { deviceTimeZone, minutes, quietHours } from "./push";

describe("quiet hours", () => {
  it("go with the device's IANA time zone, not an offset of the day they were set", () => {
    expect(quietHours("22:00", "07:00", "Europe/Berlin")).toEqual({ fromMinute: 1320, toMinute: 420, timeZone: "Europe/Berlin" });
    expect(quietHours("22:00", "07:00")?.timeZone).toBe(Intl.DateTimeFormat().resolvedOptions().timeZone);
    expect(deviceTimeZone()).toMatch(/^[A-Za-z_+\-/0-9]+$/);
  });

  it("none for an empty window or unreadable times", () => {
    expect(quietHours("10:00", "10:00", "UTC")).toBeNull();
    expect(quietHours("25:00", "07:00", "UTC")).toBeNull();
    expect(minutes("7:05")).toBe(425);
    expect(minutes("7h")).toBeNull();
  });
});
