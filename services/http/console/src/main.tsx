// mnemo's admin console: a token pasted on the sign-in screen, then the
// tenant's subjects, memories with their history and time travel, the
// review queue, the audit timeline and erasures, all through the public
// API with that token.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";

import { AuditPage } from "./pages/audit";
import { ErasuresPage } from "./pages/erasures";
import { MemoryPage } from "./pages/memory";
import { OverviewPage } from "./pages/overview";
import { ReviewPage } from "./pages/review";
import { SubjectPage } from "./pages/subject";
import { href, interceptLinks, navigate, parse, useLocation } from "./router";
import type { Claims } from "./session";
import { forgetToken, readClaims, storedToken, storeToken } from "./session";
import { SessionContext, formatTime } from "./ui";
import "./style.css";

type Theme = "light" | "dark" | "system";
const THEME_KEY = "mnemo.console.theme";

function applyTheme(theme: Theme) {
  if (theme === "system") delete document.documentElement.dataset["theme"];
  else document.documentElement.dataset["theme"] = theme;
}

function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(() => (localStorage.getItem(THEME_KEY) as Theme | null) ?? "system");
  useEffect(() => {
    applyTheme(theme);
    localStorage.setItem(THEME_KEY, theme);
  }, [theme]);
  return (
    <label class="theme">
      <span>Theme</span>
      <select
        value={theme}
        onChange={(e) => {
          const chosen = (e.currentTarget as HTMLSelectElement).value as Theme;
          applyTheme(chosen);
          setTheme(chosen);
        }}
      >
        <option value="system">System</option>
        <option value="light">Light</option>
        <option value="dark">Dark</option>
      </select>
    </label>
  );
}

function SignIn({ onSignIn }: { onSignIn: (token: string) => void }) {
  const [value, setValue] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const submit = (event: Event) => {
    event.preventDefault();
    const token = value.trim().replace(/^Bearer\s+/i, "");
    const claims = readClaims(token);
    if (!claims) {
      setProblem("That is not a mnemo token: a JWT has three dot-separated parts.");
      return;
    }
    if (claims.exp !== null && claims.exp * 1000 < Date.now()) {
      setProblem(`That token expired on ${formatTime(claims.exp * 1000)}.`);
      return;
    }
    onSignIn(token);
  };
  return (
    <main id="main" class="sign-in">
      <h1>mnemo admin console</h1>
      <form onSubmit={submit} aria-describedby="sign-in-help">
        <label for="token">Token</label>
        <textarea
          id="token"
          name="token"
          rows={5}
          spellcheck={false}
          autocomplete="off"
          value={value}
          onInput={(e) => setValue((e.currentTarget as HTMLTextAreaElement).value)}
          aria-invalid={problem ? "true" : "false"}
        />
        <p id="sign-in-help" class="muted">
          Paste a bearer token for this server (<code>mnemo token --tenant T --scope all</code> in development). It is
          kept in this tab only (session storage) and sent to this server alone.
        </p>
        {problem && (
          <p class="notice error" role="alert">
            {problem}
          </p>
        )}
        <button type="submit" class="primary">
          Sign in
        </button>
      </form>
    </main>
  );
}

function Nav({ claims, current, onSignOut }: { claims: Claims; current: string; onSignOut: () => void }) {
  const link = (to: string, label: string, page: string) => (
    <a href={to} aria-current={current === page ? "page" : undefined}>
      {label}
    </a>
  );
  return (
    <header class="top">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <nav aria-label="Console">
        <strong class="brand">mnemo</strong>
        {link(href.overview(), "Overview", "overview")}
        {claims.subject && link(href.subject(claims.subject), `Subject ${claims.subject}`, "subject")}
        {link(href.review(), "Review", "review")}
        {link(href.audit(), "Audit", "audit")}
        {link(href.erasures(), "Erasures", "erasures")}
      </nav>
      <div class="who">
        <span class="muted" title={[...claims.scopes].join(" ")}>
          {claims.tenant ?? "?"} · {claims.sub ?? "?"}
          {claims.subject ? ` · bound to ${claims.subject}` : ""}
        </span>
        <ThemeToggle />
        <button type="button" onClick={onSignOut}>
          Sign out
        </button>
      </div>
    </header>
  );
}

function App() {
  const [token, setToken] = useState<string | null>(storedToken);
  const { pathname } = useLocation();
  const claims = token ? readClaims(token) : null;
  const route = parse(pathname);

  useEffect(() => {
    document.title = `mnemo console · ${route.page === "subject" ? route.subject : route.page}`;
  }, [pathname]);

  if (!token || !claims) {
    return (
      <SignIn
        onSignIn={(pasted) => {
          storeToken(pasted);
          setToken(pasted);
        }}
      />
    );
  }
  const signOut = () => {
    forgetToken();
    setToken(null);
    navigate(href.overview(), true);
  };
  let page;
  switch (route.page) {
    case "overview":
      page = <OverviewPage />;
      break;
    case "subject":
      page = <SubjectPage key={route.subject} subject={route.subject} />;
      break;
    case "memory":
      page = <MemoryPage key={route.id} id={route.id} />;
      break;
    case "review":
      page = <ReviewPage />;
      break;
    case "audit":
      page = <AuditPage />;
      break;
    case "erasures":
      page = <ErasuresPage key={route.id ?? ""} id={route.id} />;
      break;
    default:
      page = (
        <>
          <h1>Not found</h1>
          <p>
            No console page at <code>{pathname}</code>. <a href={href.overview()}>Back to the overview</a>.
          </p>
        </>
      );
  }
  return (
    <SessionContext.Provider value={claims}>
      <Nav claims={claims} current={route.page} onSignOut={signOut} />
      <main id="main" tabIndex={-1}>
        {page}
      </main>
    </SessionContext.Provider>
  );
}

applyTheme((localStorage.getItem(THEME_KEY) as Theme | null) ?? "system");
interceptLinks();
render(<App />, document.getElementById("app")!);
