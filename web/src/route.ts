/** The URL hash as a route: which session is open, whether its tool pane is, which sheet. */
import { useEffect, useState } from "preact/hooks";

export interface Route {
  sessionID: string | null;
  tools: boolean;
  dashboard: boolean;
  newSession: boolean;
  devices: boolean;
  inbox: boolean;
}

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  const r: Route = { sessionID: null, tools: false, dashboard: false, newSession: false, devices: false, inbox: false };
  if (parts[0] === "s" && parts[1]) {
    r.sessionID = decodeURIComponent(parts[1]);
    r.tools = parts[2] === "tools";
  } else if (parts[0] === "dashboard") r.dashboard = true;
  else if (parts[0] === "new") r.newSession = true;
  else if (parts[0] === "devices") r.devices = true;
  else if (parts[0] === "inbox") r.inbox = true;
  return r;
}

export function href(r: Partial<Route>): string {
  if (r.newSession) return "#/new";
  if (r.devices) return "#/devices";
  if (r.sessionID) return `#/s/${encodeURIComponent(r.sessionID)}${r.tools ? "/tools" : ""}`;
  if (r.dashboard) return "#/dashboard";
  if (r.inbox) return "#/inbox";
  return "#/";
}

export function go(r: Partial<Route>): void {
  location.hash = href(r);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    window.addEventListener("hashchange", on);
    return () => window.removeEventListener("hashchange", on);
  }, []);
  return route;
}

/** 1, 2 or 3 panes by the window's width (not the device). */
export function panesFor(width: number): 1 | 2 | 3 {
  if (width < 600) return 1;
  if (width < 1100) return 2;
  return 3;
}

export function usePanes(): 1 | 2 | 3 {
  const [panes, setPanes] = useState(() => panesFor(window.innerWidth));
  useEffect(() => {
    const on = () => setPanes(panesFor(window.innerWidth));
    window.addEventListener("resize", on);
    return () => window.removeEventListener("resize", on);
  }, []);
  return panes;
}
