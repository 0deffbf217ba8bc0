//! HTTP proxies end to end (issue 38 §1), through a real proxy the tests start: Debian's
//! tinyproxy, on a free loopback port with a generated config (with `BasicAuth` where the
//! test says). Each case is proved by what the proxy logged and by what the user sees:
//! an HTTPS server through a `CONNECT` tunnel (its certificate from a throwaway CA,
//! `fixtures/tls/terminator.py`), plain HTTP as absolute-form requests, credentials accepted
//! and refused (407), the environment's variables and `NO_PROXY`, an entry's `"proxy"`, and
//! an OAuth login.
//!
//! Loopback is never proxied by the environment, so the tests of the variables reach the
//! fixture at this machine's own non-loopback address; the others name the proxy
//! explicitly (`probe --proxy`, an entry's `"proxy"`), which applies to loopback too.
//!
//! Skipped when tinyproxy (or, for HTTPS and OAuth, the venv) is missing, unless
//! `AGENVOY_REQUIRE_INTEROP=1` (as `.ci/run` sets).
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::Proxy;
use agenvoy_mcp::auth::{LoopbackAgent, MemoryStore, OAuth, OAuthConfig};
use common::py_oauth::{PyServer, headless_browser};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

const USER: &str = "alice";
const PASSWORD: &str = "pr0xy-s3cret";

/// A tinyproxy in the foreground, killed when dropped.
struct Tinyproxy {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT`.
    url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tinyproxy {
    /// Starts one; with `BasicAuth` if `basic_auth`. `None` (SKIPPED) without tinyproxy.
    fn start(basic_auth: bool) -> Option<Tinyproxy> {
        if !common::system_program(
            "tinyproxy",
            "Debian's tinyproxy, the proxy of tests/proxy.rs",
        ) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // No `ConnectPort` line: every port may be tunnelled. As root tinyproxy wants a user
        // to become.
        let mut config =
            format!("Port {port}\nListen 127.0.0.1\nTimeout 30\nLogLevel Connect\nMaxClients 50\n");
        if is_root() {
            config.push_str("User nobody\nGroup nogroup\n");
        }
        if basic_auth {
            config.push_str(&format!("BasicAuth {USER} {PASSWORD}\n"));
        }
        let path = dir.path().join("tinyproxy.conf");
        std::fs::write(&path, config).unwrap();
        let log = dir.path().join("tinyproxy.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new("tinyproxy")
            .arg("-d")
            .arg("-c")
            .arg(&path)
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        let proxy = Tinyproxy {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "tinyproxy did not listen: {}",
                proxy.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(proxy)
    }

    /// The proxy's URL with the right (or a wrong) password.
    fn with_credentials(&self, password: &str) -> String {
        self.url
            .replacen("http://", &format!("http://{USER}:{password}@"), 1)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The request lines it received (`CONNECT host:port HTTP/1.1`, `POST http://...`).
    fn requests(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter_map(|l| l.split_once("): ").filter(|_| l.contains("Request (")))
            .map(|(_, request)| request.to_string())
            .collect()
    }
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The fixture over HTTPS: the fixture on loopback, a TLS front for it; the front's URL and
/// the file of the CA that signed its certificate (for `SSL_CERT_FILE`).
struct HttpsFixture {
    _fixture: common::HttpFixture,
    _front: common::Listening,
    url: String,
    ca: PathBuf,
    _dir: tempfile::TempDir,
}

impl HttpsFixture {
    fn start() -> Option<HttpsFixture> {
        let python = common::installed("venv/bin/python")?;
        let fixture = common::HttpFixture::start("modern", &[]);
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        let target = fixture
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        let mut command = Command::new(python);
        command
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tls/terminator.py"))
            .args(["--target", target, "--ca-out"])
            .arg(&ca);
        let front = common::Listening::start(command);
        Some(HttpsFixture {
            url: format!("{}/mcp", front.url),
            _fixture: fixture,
            _front: front,
            ca,
            _dir: dir,
        })
    }
}

/// Runs the binary with `args` and no proxy variable but those of `env`.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(common::binary());
    command.args(args);
    for name in [
        "https_proxy",
        "HTTPS_PROXY",
        "http_proxy",
        "HTTP_PROXY",
        "all_proxy",
        "ALL_PROXY",
        "no_proxy",
        "NO_PROXY",
    ] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    command.output().unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// This machine's own address that is not loopback (the route out), if it has one: a URL
/// with it is one the environment's proxy applies to.
fn own_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    // No packet is sent: connecting a UDP socket only picks the route.
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn probe_reaches_an_https_server_through_the_proxy_with_credentials() {
    let Some(proxy) = Tinyproxy::start(true) else {
        return;
    };
    let Some(server) = HttpsFixture::start() else {
        return;
    };
    let ca = server.ca.to_str().unwrap();
    let with_password = proxy.with_credentials(PASSWORD);
    let output = run(
        &["probe", "--proxy", &with_password, &server.url],
        &[("SSL_CERT_FILE", ca)],
    );
    let shown = text(&output);
    assert!(output.status.success(), "{shown}\n{}", proxy.log());
    assert!(
        shown.contains(&format!("proxy:        {}\n", proxy.url)),
        "{shown}"
    );
    assert!(shown.contains("transport:    http"), "{shown}");
    let authority = server
        .url
        .trim_start_matches("https://")
        .trim_end_matches("/mcp");
    let requests = proxy.requests();
    assert!(
        requests
            .iter()
            .any(|r| r == &format!("CONNECT {authority} HTTP/1.1")),
        "{requests:?}"
    );
    // Through the tunnel only: the proxy saw no request in the clear.
    assert!(
        requests.iter().all(|r| r.starts_with("CONNECT ")),
        "{requests:?}"
    );
    assert!(!shown.contains(PASSWORD), "{shown}");

    // The same through the JSON report, the tunnel's TLS checked against the origin's name:
    // without the CA the certificate is refused.
    let report = run(
        &["probe", "--json", "--proxy", &with_password, &server.url],
        &[("SSL_CERT_FILE", ca)],
    );
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report["proxy"], json!(proxy.url));
    assert!(report["tools"].as_array().unwrap().len() > 3, "{report}");
    let unknown_ca = run(&["probe", "--proxy", &with_password, &server.url], &[]);
    let shown = text(&unknown_ca);
    assert!(!unknown_ca.status.success());
    assert!(shown.contains("certificate"), "{shown}");

    // A proxy that asks for no credentials gets none.
    let Some(open) = Tinyproxy::start(false) else {
        return;
    };
    let output = run(
        &["probe", "--json", "--proxy", &open.url, &server.url],
        &[("SSL_CERT_FILE", ca)],
    );
    assert!(output.status.success(), "{}", text(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["proxy"], json!(open.url));
    assert!(
        open.requests()
            .contains(&format!("CONNECT {authority} HTTP/1.1")),
        "{:?}",
        open.requests()
    );
    assert!(!open.log().contains("Proxy-Authorization"));
}

#[test]
fn wrong_proxy_credentials_name_the_proxy_never_the_password() {
    let Some(proxy) = Tinyproxy::start(true) else {
        return;
    };
    let fixture = common::HttpFixture::start("modern", &[]);
    let https = fixture.url.replacen("http://", "https://", 1);
    // Wrong credentials: tinyproxy answers `CONNECT` with 401 (a proxy following RFC 9110
    // says 407); either is the proxy's refusal, as nothing but the proxy answers CONNECT.
    let wrong = "wr0ng-passw0rd";
    let output = run(
        &["probe", "--proxy", &proxy.with_credentials(wrong), &https],
        &[],
    );
    let shown = text(&output);
    assert!(!output.status.success(), "{shown}");
    assert!(
        shown.contains(&format!(
            "proxy {} refused: 401 Unauthorized (check the proxy credentials)",
            proxy.url
        )),
        "{shown}"
    );
    assert!(!shown.contains(wrong) && !shown.contains(USER), "{shown}");
    // Plain HTTP sends the credentials with the request itself; wrong ones are refused and
    // never shown either.
    let output = run(
        &[
            "probe",
            "--proxy",
            &proxy.with_credentials(wrong),
            &fixture.url,
        ],
        &[],
    );
    let shown = text(&output);
    assert!(!output.status.success(), "{shown}");
    assert!(!shown.contains(wrong) && !shown.contains(USER), "{shown}");
    // No credentials: 407, both ways, and the error says where they go.
    for url in [&fixture.url, &https] {
        let output = run(&["probe", "--proxy", &proxy.url, url], &[]);
        let shown = text(&output);
        assert!(!output.status.success(), "{shown}");
        assert!(
            shown.contains(&format!(
                "proxy {} refused: 407 Proxy Authentication Required (the proxy wants credentials: put the user name and password in the proxy URL)",
                proxy.url
            )),
            "{url}: {shown}"
        );
    }
    let requests = proxy.requests();
    let authority = fixture
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    assert!(
        requests.contains(&format!("POST {} HTTP/1.1", fixture.url)),
        "{requests:?}"
    );
    assert!(
        requests.contains(&format!("CONNECT {authority} HTTP/1.1")),
        "{requests:?}"
    );
    assert_eq!(fixture.stats()["posts"], 0, "nothing got through");
}

#[test]
fn the_environment_proxies_plain_http_and_no_proxy_goes_direct() {
    let Some(proxy) = Tinyproxy::start(false) else {
        return;
    };
    let Some(ip) = own_address() else {
        // The environment's proxy never applies to loopback.
        common::not_installed("a network address other than loopback");
        return;
    };
    let fixture = common::HttpFixture::start_at(&format!("{ip}:0"), "modern", &[]);
    assert!(fixture.url.contains(&ip.to_string()), "{}", fixture.url);
    let proxied = run(
        &["probe", "--json", &fixture.url],
        &[("HTTP_PROXY", "http://wrong:1"), ("http_proxy", &proxy.url)],
    );
    assert!(proxied.status.success(), "{}", text(&proxied));
    let report: Value = serde_json::from_slice(&proxied.stdout).unwrap();
    assert_eq!(report["proxy"], json!(proxy.url), "lower case wins");
    let requests = proxy.requests();
    assert!(
        requests.contains(&format!("POST {} HTTP/1.1", fixture.url)),
        "absolute-form: {requests:?}"
    );
    let seen = requests.len();

    let subnet = match ip {
        std::net::IpAddr::V4(v4) => format!("{}.0.0.0/8", v4.octets()[0]),
        std::net::IpAddr::V6(_) => format!("{ip}/128"),
    };
    for no_proxy in [subnet.as_str(), &ip.to_string(), "*"] {
        let direct = run(
            &["probe", "--json", &fixture.url],
            &[
                ("HTTP_PROXY", &proxy.url),
                ("NO_PROXY", &format!("other.example, {no_proxy}")),
            ],
        );
        assert!(direct.status.success(), "{}", text(&direct));
        let report: Value = serde_json::from_slice(&direct.stdout).unwrap();
        assert_eq!(report["proxy"], "direct", "NO_PROXY={no_proxy}");
    }
    assert_eq!(proxy.requests().len(), seen, "the proxy saw nothing");

    // A proxy this client cannot speak is an error naming its variable, not a way around.
    let https = fixture.url.replacen("http://", "https://", 1);
    let socks = run(
        &["probe", &https],
        &[("ALL_PROXY", "socks5://alice:hunter2@127.0.0.1:1080")],
    );
    let shown = text(&socks);
    assert!(!socks.status.success());
    assert!(
        shown.contains("ALL_PROXY is socks5://127.0.0.1:1080: only http:// proxies are supported"),
        "{shown}"
    );
    assert!(!shown.contains("hunter2"), "{shown}");
}

#[test]
fn an_entry_chooses_its_proxy_and_tools_shows_it() {
    let Some(proxy) = Tinyproxy::start(true) else {
        return;
    };
    let through = common::HttpFixture::start("modern", &[]);
    let Some(ip) = own_address() else {
        // The environment's proxy never applies to loopback.
        common::not_installed("a network address other than loopback");
        return;
    };
    let around = common::HttpFixture::start_at(&format!("{ip}:0"), "modern", &[]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let entries = json!({"servers": {
        "through": {"url": through.url, "proxy": "${TEST_PROXY}"},
        "around": {"url": around.url, "proxy": false},
    }});
    std::fs::write(&config, entries.to_string()).unwrap();
    let config = config.to_str().unwrap();
    let dir_text = dir.path().to_str().unwrap();
    let env = [
        ("AGENVOY_CONFIG_DIR", dir_text),
        ("TEST_PROXY", &proxy.with_credentials(PASSWORD)),
        // The environment's proxy does not apply to an entry with `"proxy": false`.
        ("HTTP_PROXY", &proxy.url),
    ];
    let output = run(&["tools", "--json", "--config", config], &env);
    assert!(output.status.success(), "{}", text(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let proxy_of = |name: &str| {
        report["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()["proxy"]
            .clone()
    };
    assert_eq!(proxy_of("through"), json!(proxy.url));
    assert_eq!(proxy_of("around"), "direct");
    let text_report = run(&["tools", "--config", config], &env);
    let shown = text(&text_report);
    assert!(
        shown.contains(&format!("    proxy: {}\n", proxy.url)),
        "{shown}"
    );
    assert!(shown.contains("    proxy: direct\n"), "{shown}");
    assert!(!shown.contains(PASSWORD) && !text(&output).contains(PASSWORD));
    let requests = proxy.requests();
    assert!(
        requests.contains(&format!("POST {} HTTP/1.1", through.url)),
        "{requests:?}"
    );
    assert!(
        !requests.iter().any(|r| r.contains(&ip.to_string())),
        "{requests:?}"
    );
    assert!(around.stats()["posts"].as_u64().unwrap_or(1) > 0);
}

#[tokio::test]
async fn an_oauth_login_goes_through_the_proxy() {
    let Some(proxy) = Tinyproxy::start(true) else {
        return;
    };
    let Some(server) = PyServer::start() else {
        return;
    };
    let mut agent = LoopbackAgent::new();
    agent.open_browser = false;
    agent.show_url = Arc::new(headless_browser);
    let mut config = OAuthConfig::new("py", &server.url)
        .with_proxy(Proxy::Url(proxy.with_credentials(PASSWORD)));
    config.redirect_uri = "http://localhost:0/callback".into();
    let oauth = OAuth::new(config, Arc::new(MemoryStore::new())).with_user_agent(Arc::new(agent));
    if let Err(e) = oauth.login().await {
        panic!("the login fails through the proxy: {e}\n{}", proxy.log());
    }
    assert!(!format!("{oauth:?}").contains(PASSWORD));
    let requests = proxy.requests();
    let base = format!("http://{}", server.authority());
    for path in [
        "/.well-known/oauth-protected-resource",
        "/register",
        "/token",
    ] {
        assert!(
            requests
                .iter()
                .any(|r| r.contains(&format!("{base}{path}"))),
            "{path}: {requests:?}"
        );
    }
    let stats = server.request("GET", "/test/stats");
    assert_eq!(stats["authorization_code_grants"], 1, "{stats}");

    // No credentials: the login fails naming the proxy and what it wants.
    let mut config = OAuthConfig::new("py", &server.url).with_proxy(Proxy::Url(proxy.url.clone()));
    config.redirect_uri = "http://localhost:0/callback".into();
    let oauth = OAuth::new(config, Arc::new(MemoryStore::new()));
    let err = oauth.login().await.expect_err("the proxy refuses");
    assert!(
        err.to_string().contains(&format!(
            "proxy {} refused: 407 Proxy Authentication Required",
            proxy.url
        )),
        "{err}"
    );
}

#[test]
fn the_api_shows_each_servers_proxy_without_credentials() {
    let Some(proxy) = Tinyproxy::start(true) else {
        return;
    };
    let fixture = common::HttpFixture::start("modern", &[]);
    let daemon = common::daemon::Daemon::start(Some(json!({"servers": {
        "through": {"url": fixture.url, "proxy": proxy.with_credentials(PASSWORD)},
    }})));
    let api = &daemon.api;
    let deadline = Instant::now() + Duration::from_secs(20);
    while api.status_of("through")["state"] != "connected" {
        assert!(Instant::now() < deadline, "{}", api.status_of("through"));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(api.status_of("through")["proxy"], json!(proxy.url));
    let entries = api.get("/v1/mcp");
    assert_eq!(entries["servers"]["through"]["proxy"], json!(proxy.url));
    // Added at run time with no proxy: straight to the server.
    let added = api.post(
        "/v1/mcp",
        json!({"name": "around", "url": fixture.url, "proxy": false}),
    );
    assert_eq!(added.status, 201, "{added:?}");
    assert_eq!(added.json()["server"]["proxy"], "direct");
    let everything = format!(
        "{}{}{}",
        api.get("/v1/mcp/status"),
        api.get("/v1/mcp"),
        added.json()
    );
    assert!(!everything.contains(PASSWORD), "{everything}");
    let requests = proxy.requests();
    assert!(
        requests.contains(&format!("POST {} HTTP/1.1", fixture.url)),
        "{requests:?}"
    );
}
