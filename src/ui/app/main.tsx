/**
 * The Edgelog web console (docs/OBSERVABILITY.md "Web console"): a Preact single-page app that
 * the gateway serves under /ui/ and that talks to the API of the same origin. Built by
 * src/ui/build.ts into src/ui/assets.generated.ts.
 */
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { api, getToken, setToken, signIn, toApiError, type ApiError } from "./api.ts";
import { ErrorBox } from "./components.tsx";
import { GroupPage, GroupsPage } from "./groups.tsx";
import { MessagesPage } from "./messages.tsx";
import { sampler } from "./metrics.ts";
import { OverviewPage } from "./overview.tsx";
import { type Route, useRoute } from "./router.ts";
import { StreamPage, StreamsPage } from "./streams.tsx";
import { TopicPage, TopicsPage } from "./topics.tsx";
import "./styles.css";

function Page({ route }: { route: Route }) {
  const [area, id, sub] = route.segments;
  if (area === "topics" && id !== undefined && sub === "messages") return <MessagesPage key={id} topic={id} query={route.query} />;
  if (area === "topics" && id !== undefined) return <TopicPage key={id} name={id} />;
  if (area === "topics") return <TopicsPage />;
  if (area === "groups" && id !== undefined) return <GroupPage key={id} id={id} />;
  if (area === "groups") return <GroupsPage />;
  if (area === "streams" && id !== undefined) return <StreamPage key={id} path={route.segments.slice(1).join("/")} />;
  if (area === "streams") return <StreamsPage />;
  if (area === undefined) return <OverviewPage />;
  return (
    <>
      <h1 tabIndex={-1}>Not found</h1>
      <p>
        The console has no page <code>{location.hash}</code>. <a href="#/">Overview</a>
      </p>
    </>
  );
}

/**
 * The token panel: paste a bearer token, or sign in as a SCRAM user (the password is exchanged
 * for a token); the token is kept in sessionStorage for this tab. Shows whom it authenticates.
 */
function TokenPanel({ onChange }: { onChange: () => void }) {
  const [draft, setDraft] = useState("");
  const [user, setUser] = useState("");
  const [password, setPassword] = useState("");
  const [saved, setSaved] = useState(getToken() !== "");
  const [who, setWho] = useState<string>("");
  const [error, setError] = useState<ApiError | null>(null);
  const panel = useRef<HTMLDetailsElement>(null);
  const check = () => {
    setError(null);
    setWho("");
    api<{ principal: string; superuser: boolean }>("/v1/auth/whoami").then(
      (w) => setWho(`${w.principal}${w.superuser ? " (superuser)" : ""}`),
      (e: unknown) => setError(toApiError(e)),
    );
  };
  useEffect(check, []);
  const use = (token: string) => {
    setToken(token);
    setSaved(token !== "");
    if (panel.current !== null) panel.current.open = false;
    check();
    onChange();
  };
  return (
    <div class="token">
      <details ref={panel}>
        <summary>{saved ? `Token set${who !== "" ? `: ${who}` : ""}` : "No token"}</summary>
        <form
          aria-label="Token"
          onSubmit={(e) => {
            e.preventDefault();
            const t = draft.trim();
            setDraft("");
            use(t);
          }}
        >
          <label>
            Bearer token (JWT; kept in this tab only)
            <input type="password" name="token" autocomplete="off" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} />
          </label>
          <button type="submit">Use token</button>{" "}
          <button type="button" onClick={() => use("")}>
            Forget token
          </button>
        </form>
        <form
          aria-label="Sign in"
          onSubmit={(e) => {
            e.preventDefault();
            setError(null);
            signIn(user, password).then(
              (r) => {
                setPassword("");
                use(r.token);
              },
              (err: unknown) => setError(toApiError(err)),
            );
          }}
        >
          <p class="small muted">Or sign in as a user: the password is exchanged for a token (POST /v1/auth/token) and not kept.</p>
          <div class="row">
            <label>
              User
              <input name="user" autocomplete="username" required value={user} onInput={(e) => setUser(e.currentTarget.value)} />
            </label>
            <label>
              Password
              <input name="password" type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
            </label>
          </div>
          <button type="submit">Sign in</button>
        </form>
      </details>
      <p class="small" role="status">
        {who !== "" ? `Signed in as ${who}.` : ""}
      </p>
      <ErrorBox error={error} what="Token" />
    </div>
  );
}

const NAV: [string, string][] = [
  ["#/", "Overview"],
  ["#/topics", "Topics"],
  ["#/groups", "Consumer groups"],
  ["#/streams", "Durable Streams"],
];

function App() {
  const route = useRoute();
  const [generation, setGeneration] = useState(0);
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);
  // After a navigation, focus the new page's heading so keyboard and screen-reader users land on it.
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.querySelector<HTMLElement>("h1")?.focus();
  }, [route.segments.join("/")]);
  const current = `#/${route.segments[0] ?? ""}`;
  return (
    <>
      <button type="button" class="skip" onClick={() => main.current?.querySelector<HTMLElement>("h1")?.focus()}>
        Skip to content
      </button>
      <header>
        <a class="brand" href="#/">
          Edgelog
        </a>
        <nav aria-label="Main">
          <ul>
            {NAV.map(([to, label]) => (
              <li key={to}>
                <a href={to} aria-current={current === (to === "#/" ? "#/" : to) ? "page" : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <TokenPanel
          onChange={() => {
            sampler.reset();
            setGeneration((g) => g + 1);
          }}
        />
      </header>
      <main id="main" ref={main}>
        <Page key={generation} route={route} />
      </main>
    </>
  );
}

addEventListener("unhandledrejection", (e) => {
  // Nothing is swallowed: an unexpected failure is shown, not just logged.
  const box = document.getElementById("fatal") ?? document.body.appendChild(Object.assign(document.createElement("div"), { id: "fatal", className: "error", role: "alert" }));
  const err = toApiError(e.reason);
  box.textContent = `${err.code}: ${err.message}`;
});

render(<App />, document.getElementById("app")!);
