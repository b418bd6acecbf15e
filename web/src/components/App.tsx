/** The adaptive shell: 1 pane under 600 px, 2 from 600, 3 from 1100; the link banner. */
import { Suspense, lazy } from "preact/compat";
import { useState } from "preact/hooks";

import { go, useRoute, usePanes } from "../route";
import { useBadge } from "../inbox";
import { type HostFleet, listed, useFleet } from "../remote/fleet";
import { type CockpitStore, useStore } from "../store";
import { Dashboard } from "./Dashboard";
import { DevicesSheet } from "./DevicesSheet";
import { Inbox } from "./Inbox";
import { LinkBanner } from "./LinkBanner";
import { NewSessionSheet } from "./NewSessionSheet";
import { PendingTray } from "./PendingTray";
import { SessionList } from "./SessionList";
import { SessionPane } from "./SessionPane";

// The tool pane (diff2html and friends) loads on first use: the list and the transcript come
// up without it.
const LazyToolPane = lazy(() => import("./ToolPane").then((m) => ({ default: m.ToolPane })));

function ToolPane(props: { store: CockpitStore; sessionID: string; onClose: () => void }) {
  return (
    <Suspense fallback={<aside class="pane tool-pane" aria-busy="true"><p class="empty">Loading tools…</p></aside>}>
      <LazyToolPane {...props} />
    </Suspense>
  );
}

/** `fleet`: every remembered host, for the inbox and the badge (the page's host alone without). */
export function App({ store, fleet }: { store: CockpitStore; fleet?: HostFleet }) {
  useStore(store);
  const hosts = useFleet(fleet, store);
  const route = useRoute();
  const panes = usePanes();
  const [listCollapsed, setListCollapsed] = useState(false);
  const [toolsCollapsed, setToolsCollapsed] = useState(false);
  const id = route.sessionID && store.sessions.has(route.sessionID) ? route.sessionID : route.sessionID;
  const stale = store.link !== "online" || store.restoredAt !== null;
  useBadge(listed(hosts).map((h) => h.store));

  let content;
  if (panes === 1) {
    // One pane: list → session → tools by navigation.
    if (id && route.tools) content = <ToolPane store={store} sessionID={id} onClose={() => go({ sessionID: id })} />;
    else if (id) content = <SessionPane store={store} sessionID={id} panes={1} onBack={() => go({})} toolsOpen={false} />;
    else if (route.dashboard) content = <Dashboard store={store} onBack={() => go({})} />;
    else if (route.inbox) content = <Inbox store={store} fleet={fleet} onBack={() => go({})} />;
    else content = <SessionList store={store} selected={null} />;
  } else if (panes === 2) {
    // Two panes: list + session; opening the tool pane collapses the list.
    const showTools = Boolean(id && route.tools);
    content = (
      <>
        {!showTools && <SessionList store={store} selected={id} />}
        {id ? (
          <SessionPane store={store} sessionID={id} panes={2} toolsOpen={showTools} />
        ) : route.inbox ? (
          <Inbox store={store} fleet={fleet} />
        ) : (
          <Dashboard store={store} />
        )}
        {showTools && id && <ToolPane store={store} sessionID={id} onClose={() => go({ sessionID: id })} />}
      </>
    );
  } else {
    // Three panes: list + session + tools, the side panes collapsible.
    const showTools = Boolean(id) && !toolsCollapsed;
    content = (
      <>
        {listCollapsed ? (
          <button class="rail" title="Show sessions" onClick={() => setListCollapsed(false)} data-testid="expand-list">
            ☰
          </button>
        ) : (
          <SessionList store={store} selected={id} onCollapse={() => setListCollapsed(true)} />
        )}
        {id ? (
          <SessionPane
            store={store}
            sessionID={id}
            panes={3}
            toolsOpen={showTools}
            onToggleTools={() => setToolsCollapsed(!toolsCollapsed)}
          />
        ) : route.inbox ? (
          <Inbox store={store} fleet={fleet} />
        ) : (
          <Dashboard store={store} />
        )}
        {showTools && id && <ToolPane store={store} sessionID={id} onClose={() => setToolsCollapsed(true)} />}
      </>
    );
  }

  return (
    <div class={`shell panes-${panes}${stale ? " stale" : ""}`} data-panes={panes} data-link={store.link}>
      <LinkBanner store={store} />
      <PendingTray store={store} />
      <div class="panes">{content}</div>
      {route.newSession && <NewSessionSheet store={store} onClose={() => history.back()} />}
      {route.devices && <DevicesSheet store={store} onClose={() => history.back()} />}
    </div>
  );
}
