//! The redactor's unit tests and the corpus test (tests/fixtures/secrets).

use memkit_core::config::Config;

use super::config::NO_SETTINGS;
use super::*;

fn r(text: &str) -> String {
    redact_with(text, &NO_SETTINGS, true).into_owned()
}

/// (input, what must be gone, the kind its marker names)
fn assert_redacted(input: &str, secret: &str, kind: &str) {
    let out = r(input);
    assert!(
        !out.contains(secret),
        "{secret:?} kept in {out:?} (input {input:?})"
    );
    assert!(
        out.contains(&format!("[REDACTED:{kind}]")),
        "no [REDACTED:{kind}] in {out:?} (input {input:?})"
    );
}

fn assert_kept(input: &str) {
    assert_eq!(r(input), input, "changed");
}

#[test]
fn redacts_each_kind_and_keeps_the_rest() {
    let cases = [
        (
            "keep <private>my secret</private> this",
            "keep [REDACTED:private] this",
        ),
        (
            "id AKIAIOSFODNN7EXAMPLE x",
            "id [REDACTED:aws_access_key] x",
        ),
        (
            "tok ghp_0123456789abcdefghijABCDEFGHIJ012345 end",
            "tok [REDACTED:github_token] end",
        ),
        (
            "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
            "ANTHROPIC_API_KEY=[REDACTED:anthropic_key]",
        ),
        (
            "key sk-proj-abcdefghijklmnopqrstuvwx1234",
            "key [REDACTED:openai_key]",
        ),
        (
            "password=hunter22 next",
            "password=[REDACTED:password] next",
        ),
        (
            "\"db_password\": \"s3cr3t!\"",
            "\"db_password\": \"[REDACTED:password]\"",
        ),
        (
            "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123",
            "Authorization: Bearer [REDACTED:bearer]",
        ),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "jwt [REDACTED:jwt]",
        ),
        ("nothing to see here", "nothing to see here"),
        ("the token count is 5", "the token count is 5"),
    ];
    for (input, want) in cases {
        assert_eq!(r(input), want, "input: {input}");
    }
}

#[test]
fn each_class_of_the_issue_is_redacted_and_names_its_kind() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "wJalrXUtnFEMI",
            "secret",
        ),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "bPxRfiCY",
            "secret",
        ),
        (
            "DATABASE_URL=postgres://app:Sup3rS3cret@db.internal:5432/app",
            "Sup3rS3cret",
            "url_password",
        ),
        (
            "redis://:r3disPa55word@cache:6379/0",
            "r3disPa55word",
            "url_password",
        ),
        (
            "mongodb+srv://admin:m0ng0P@ss@cluster0.example.net/db",
            "m0ng0P@ss",
            "url_password",
        ),
        (
            "SECRET_KEY = 'django-insecure-9x#k2!mq'",
            "django-insecure-9x#k2!mq",
            "secret",
        ),
        (
            "NPM_TOKEN=npm_AbCdEf0123456789GhIjKl0123456789MnOp",
            "npm_AbCdEf0123456789",
            "npm_token",
        ),
        (
            "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
            "hf_AbCdEfGhIj",
            "huggingface_token",
        ),
        ("export X_TOKEN=plainvalue99", "plainvalue99", "token"),
        (
            "curl -X POST https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
            "XXXXXXXXXXXXXXXXXXXXXXXX",
            "slack_webhook",
        ),
        (
            "stripe sk_test_4eC39HqLyjWDarjtT1zdp7dc",
            "4eC39HqLyjWDarjtT1zdp7dc",
            "stripe_key",
        ),
        (
            // ci:Vq8Lm2Zx9Kt4Wp (`user:password123` is a test value: kept below).
            "Authorization: Basic Y2k6VnE4TG0yWng5S3Q0V3A=",
            "Y2k6VnE4TG0yWng5S3Q0V3A",
            "basic_auth",
        ),
        ("mysql -u root -pMyS3cretPw -h db", "MyS3cretPw", "password"),
        (
            "curl -u admin:CurlPa55 https://api.example.com",
            "CurlPa55",
            "password",
        ),
        (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXfakeKeyBodyLine1\nAbCdEfGh==\n-----END PGP PRIVATE KEY BLOCK-----",
            "lQOYBGXfakeKeyBodyLine1",
            "private_key",
        ),
        (
            "$ head -5 id_rsa\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABlwAAAAdzc2gtcn\nNhAAAAAwEAAQAAAYEAx1mVtXaKfakefakefakefakefakefakefakefakefakefakefake\n",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
            "private_key",
        ),
        (
            "the staging db password is Tr0ub4dor&3",
            "Tr0ub4dor&3",
            "password",
        ),
        ("my password: hunter2 ok", "hunter2", "password"),
        (
            "use high entropy 9fKq2LmX7vRt4ZpW8sNd3HbJ6cYg",
            "9fKq2LmX7vRt4ZpW8sNd3HbJ6cYg",
            "high_entropy",
        ),
        (
            "docker login -u me -p D0ckerPw! registry.example.com",
            "D0ckerPw!",
            "password",
        ),
        ("sshpass -p 'Ssh!Pass42' ssh host", "Ssh!Pass42", "password"),
        (
            "redis-cli -h cache -a R3disAuth! ping",
            "R3disAuth!",
            "password",
        ),
        ("--api-key abcd1234efgh5678", "abcd1234efgh5678", "api_key"),
        (
            "requests.get(url, auth=('bob', 'B0bsPass'))",
            "B0bsPass",
            "password",
        ),
        (
            "machine api.example.com\n  login bob\n  password NetrcPw9",
            "NetrcPw9",
            "password",
        ),
        (
            "Cookie: sessionid=abc123def456; csrftoken=zzz",
            "abc123def456",
            "cookie",
        ),
        (
            "https://bucket.s3.amazonaws.com/f?X-Amz-Signature=abcdef0123456789&X-Amz-Expires=60",
            "abcdef0123456789",
            "url_secret",
        ),
        (
            "admin:$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW",
            "R9h/cIPz0gi.URNNX3kh2OPST9",
            "password_hash",
        ),
        (
            "glpat-AbCdEfGhIjKlMnOpQrSt12",
            "glpat-AbCdEfGhIjKlMnOpQrSt12",
            "gitlab_token",
        ),
        (
            "SG.AbCdEfGhIjKlMnOpQrStUv.WxYz0123456789AbCdEfGhIjKlMnOpQrStUvWxYz01234",
            "WxYz0123456789AbCdEf",
            "sendgrid_key",
        ),
        (
            "VAULT_ADDR=x hvs.CAESIAbCdEfGhIjKlMnOpQrStUvWxYz0123",
            "CAESIAbCdEfGhIjKlMnOp",
            "vault_token",
        ),
        (
            "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1 x",
            "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
            "telegram_bot_token",
        ),
        (
            "https://discord.com/api/webhooks/123456789012345678/AbCdEf-GhIjKl_MnOpQr",
            "AbCdEf-GhIjKl_MnOpQr",
            "discord_webhook",
        ),
        (
            "openssl enc -aes256 -pass pass:OpenSslPw1 -in f",
            "OpenSslPw1",
            "password",
        ),
    ];
    for (input, secret, kind) in cases {
        assert_redacted(input, secret, kind);
    }
}

#[test]
fn what_a_memory_needs_is_kept() {
    for text in [
        // Hashes, ids, paths, versions.
        "commit 7c4ca6eaf5c054a470907c1dc5d342941b7e724c fixed it",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "session 6706089d-9d7e-4f48-bd2d-8f2a2546eb78 resumed",
        "/Users/dain/workspace/claude-code-log/docs/cache/37f83ec9-f2ea-42a9-925e-0d5c105cb6e8",
        "/var/folders/4n/2f7pppjd2_n0fftzg8vrlg040000gn/T/tmp6i8r8cem",
        "https://github.com/kesslerio/attio-mcp-server/raw/7c4ca6eaf5c054a470907c1dc5d342941b7e724c/CHANGELOG.md",
        "src/lib/capture/redact.rs:42",
        "tool toolu_01ApB1rYz4e7h3nZtU4G77c8 and msg_01W5wUwhA8h4Ku1Bm4uH5H7b, req_011CaBKjYuTsEY2FzRt8LsFk",
        "upgraded to v1.2.3-beta.4 and node 20.11.1",
        // Base64 of ordinary words, identifiers.
        "SGVsbG8gV29ybGQsIHRoaXMgaXMgYSB0ZXN0Lg==",
        "AbstractSingletonProxyFactoryBean2 and getUTF8StringFromBase64Buffer2",
        // Prose about passwords and tokens, with no value.
        "the password field must be validated before the token is refreshed",
        "we rotate the API key every month; the secret is stored in Vault",
        "Password: Must be at least 8 characters",
        "the token limit of 4096 was hit; max_tokens = 4096",
        "input_tokens: 1200, output_tokens: 300",
        "bearer authentication is used",
        "Authorization: required",
        // Code that names secrets without holding them.
        "password = get_password()",
        "api_key = os.environ[\"OPENAI_API_KEY\"]",
        "token: Optional[str] = None",
        "secret = settings.SECRET_KEY",
        "password: string;",
        "DB_PASSWORD=${DB_PASSWORD}",
        "connect(user=user, password=password)",
        "PWD=/home/me/project",
        "cache_key = user_123",
        "PASSWORD_FILE=/run/secrets/db",
        "mysql -u root -p mydb",
    ] {
        assert_kept(text);
    }
}

/// The corpus of tests/fixtures/secrets: every format, as text or as a JSON value.
#[test]
fn every_secret_of_the_corpus_goes_and_its_marker_names_its_kind() {
    let corpus = include_str!("../../../../tests/fixtures/secrets/corpus.jsonl");
    let mut n = 0;
    for line in corpus.lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        let (kind, secret) = (e["kind"].as_str().unwrap(), e["secret"].as_str().unwrap());
        let out = match (&e["text"], &e["json"]) {
            (Value::String(t), _) => r(t),
            (_, j) => {
                let mut j = j.clone();
                redact_value_with(&mut j, &NO_SETTINGS, true);
                j.to_string()
            }
        };
        assert!(!out.contains(secret), "{secret:?} kept in {out:?}");
        assert!(
            out.contains(&format!("[REDACTED:{kind}]")),
            "no [REDACTED:{kind}] in {out:?}"
        );
        n += 1;
    }
    assert!(n >= 40, "{n} formats");
}

#[test]
fn json_values_under_secret_keys_go_whole_numbers_included() {
    let mut v = serde_json::json!({
        "tool_use_id": "toolu_01ApB1rYz4e7h3nZtU4G77c8",
        "session_id": "6706089d-9d7e-4f48-bd2d-8f2a2546eb78",
        "config": {
            "api_key": "plain-looking-but-secret",
            "password": 123456,
            "pin_code": 4242,
            "client_secret": "abc",
            "max_tokens": 4096,
            "token_count": 12,
            "auth": {"token": "t0k3n-value"},
            "password_required": true,
            "token": null,
            "db_password": "${DB_PASSWORD}",
            "sort_key": "created_at",
            "secrets": ["one-secret", "two-secret"],
        },
        "env": [{"name": "DB_PASSWORD", "value": "EnvListPw1"}, {"name": "HOME", "value": "/root"}],
        "headers": {"Authorization": "Bearer t0k3n-value", "authorization": "opaque-t0k3n"},
    });
    redact_value_with(&mut v, &NO_SETTINGS, true);
    let c = &v["config"];
    assert_eq!(c["api_key"], "[REDACTED:api_key]");
    assert_eq!(c["password"], "[REDACTED:password]");
    assert_eq!(c["pin_code"], 4242);
    assert_eq!(c["client_secret"], "[REDACTED:secret]");
    assert_eq!(c["max_tokens"], 4096);
    assert_eq!(c["token_count"], 12);
    assert_eq!(c["auth"]["token"], "[REDACTED:token]");
    assert_eq!(c["password_required"], true);
    assert_eq!(c["token"], Value::Null);
    assert_eq!(c["db_password"], "${DB_PASSWORD}");
    assert_eq!(c["sort_key"], "created_at");
    assert_eq!(c["secrets"][1], "[REDACTED:secret]");
    assert_eq!(v["env"][0]["value"], "[REDACTED:password]");
    assert_eq!(v["env"][1]["value"], "/root");
    assert_eq!(v["tool_use_id"], "toolu_01ApB1rYz4e7h3nZtU4G77c8");
    assert_eq!(v["session_id"], "6706089d-9d7e-4f48-bd2d-8f2a2546eb78");
    assert_eq!(
        v["headers"]["Authorization"],
        "Bearer [REDACTED:authorization]"
    );
    assert_eq!(v["headers"]["authorization"], "[REDACTED:authorization]");
}

#[test]
fn triggers_are_found_across_scan_windows_and_in_any_case() {
    // A trigger straddling the 64 KiB window edge, in upper case, near the end of 200 KiB.
    for at in [64 * 1024 - 3, 128 * 1024 - 1, 200 * 1024 - 40] {
        let mut text = "x ".repeat(100 * 1024);
        text.replace_range(at..at + 24, " MYSQL -u r -pSecretPw1 ");
        let out = r(&text);
        assert!(
            out.contains("-p[REDACTED:password]"),
            "secret at {at} missed"
        );
        assert_eq!(
            out.len(),
            text.len() - "SecretPw1".len() + "[REDACTED:password]".len()
        );
    }
}

#[test]
fn private_key_blocks_go_whole() {
    let text = "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\nb";
    assert_eq!(r(text), "a\n[REDACTED:private_key]\nb");
    // Escaped inside JSON text, and cut before its END line.
    let text =
        r#"{"k": "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBfakefake0123\nAwEHoUQDQgAE"} tail"#;
    assert_eq!(r(text), r#"{"k": "[REDACTED:private_key]"} tail"#);
}

#[test]
fn redaction_is_idempotent() {
    let once = r(
        "password=hunter22 sk-ant-api03-abcdefghijklmnopqrstuvwxyz 9fKq2LmX7vRt4ZpW8sNd3HbJ6cYg the db password is Tr0ub4dor&3",
    );
    assert_eq!(r(&once), once);
}

#[test]
fn configured_patterns_add_and_the_allow_list_keeps() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        r#"
[redact]
patterns = [
  { kind = "employee_id", regex = "EMP-[0-9]{6}" },
  { kind = "db_host", regex = "host=(?P<secret>[a-z]+\\.corp)" },
]
allow = ["AKIAIOSFODNN7EXAMPLE", "hunter22"]
allow_regex = ["test_[a-z]+_[0-9A-Za-z]{20,}"]
"#,
    )
    .unwrap();
    let cfg = Config::load(dir.path()).unwrap();
    let (s, errors) = Settings::from_config(&cfg);
    assert!(errors.is_empty(), "{errors:?}");
    let out = redact_with(
        "EMP-123456 at host=db.corp, AKIAIOSFODNN7EXAMPLE password=hunter22 \
             test_fixture_9fKq2LmX7vRt4ZpW8sNd3HbJ6cYg AKIAABCDEFGHIJKLMNOP",
        &s,
        true,
    );
    assert_eq!(
        out,
        "[REDACTED:employee_id] at host=[REDACTED:db_host], AKIAIOSFODNN7EXAMPLE \
             password=hunter22 test_fixture_9fKq2LmX7vRt4ZpW8sNd3HbJ6cYg [REDACTED:aws_access_key]"
    );
    let mut v = serde_json::json!({"password": "hunter22", "token": "other1234"});
    redact_value_with(&mut v, &s, true);
    assert_eq!(v["password"], "hunter22");
    assert_eq!(v["token"], "[REDACTED:token]");
}

#[test]
fn bad_redact_settings_are_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
            dir.path().join("config.toml"),
            "[redact]\npatterns = [{kind = \"Bad Kind\", regex = \"x\"}, {kind = \"ok\", regex = \"(\"}, {kind = \"empty\", regex = \"a*\"}, {kind = \"fine\", regex = \"zz[0-9]+\"}]\nallow_regex = [\"[\"]\nallw = []\n",
        )
        .unwrap();
    let cfg = Config::load(dir.path()).unwrap();
    let (s, errors) = Settings::from_config(&cfg);
    let all = errors.join("\n");
    for want in [
        "patterns[0]: kind \"Bad Kind\"",
        "patterns[1]:",
        "patterns[2]: regex \"a*\" matches the empty string",
        "allow_regex[0]:",
        "allw: unknown setting",
    ] {
        assert!(all.contains(want), "{want:?} not in {all}");
    }
    // What is usable still works.
    assert_eq!(redact_with("zz42", &s, true), "[REDACTED:fine]");
}

/// Code, markup and test values that name a secret without holding one: the coding chats'
/// false positives and their relatives. Nothing in them changes.
#[test]
fn code_markup_and_test_values_are_kept_whole() {
    for text in [
        // Test literals and placeholders in code.
        "client.post('/login', data={'username': 'testuser', 'password': 'testpassword'})",
        "client.post('/login', data=dict(username='alice', password='mysecretpassword'))",
        "user = User(username='bob', password='secure_password123')",
        "self.client.login(username='john', password='johnpassword')",
        "create_user(username=\"john\", password=\"secret\")",
        "data = {'username': 'a', 'password': 'a'}",
        "login(password='hunter22')",
        "login(password='Welcome2024!')",
        "password = 'admin123'",
        "const apiKey = 'my_api_key';",
        "const apiKey = 'YOUR_API_KEY';",
        "api_key = \"your-api-key-here\"",
        "body = JSON.stringify({ 'token': 'some_token', 'user': 'demo' })",
        "fake_secret_token = \"coneofsilence\"",
        "headers={\"X-Token\": \"hailhydra\"}",
        "\"hashed_password\": \"fakehashedsecret\",",
        "app.config['SECRET_KEY'] = 'supersecretkey'",
        "SECRET_KEY='dev'",
        "jwt_secret = \"my-jwt-secret\"",
        "secret_key_base: \"test-only-secret-base-minimum-64-bytes-long-enough\"",
        "password = \"<password>\"",
        "password = \"{password}\"",
        "password: \"xxxxxxxx\"",
        "password: \"***\"",
        "password: \"changeme\"",
        "token = \"example\"",
        "auth=('user', 'pass')",
        "httpx.get(url, auth=(\"my_user\", \"password123\"))",
        // Placeholders in prose and configuration.
        "- Password: [Your Password]",
        "- API key: <your-api-key>",
        "SECRET_KEY=your-secret-key-here",
        "POSTGRES_PASSWORD: mysecretpassword",
        "name=fred&passwd=secret",
        // Expressions, identifiers, interpolations.
        "return self.password_hash == hashed_password",
        "print(f\"password: {new_user.password_hash}\")",
        "print(f\"Created {new_user.username} with hash {new_user.password_hash}\")",
        "self.password = password",
        "username, password = value",
        "cookies: RequestsCookieJar | CookieJar | dict[str, str]",
        ":param auth: (optional) Auth tuple to enable Basic/Digest/Custom HTTP Auth.",
        "auth = (url.username, url.password)",
        "const key = process.env.WEATHER_API_KEY;",
        "SECRET_KEY = os.environ[\"DJANGO_SECRET_KEY\"]",
        "token: `${token}`",
        "'Authorization': `Bearer ${token}`,",
        "headers.update({\"Proxy-Authorization\": proxy_auth_value})",
        "'X-CSRFToken': csrftoken",
        // Markup.
        "Password: <input type=\"password\" name=\"password\">",
        "<label for=\"confirm\">Confirm password:</label> <input type=\"password\" id=\"confirm\">",
        "<dt>Password\n<dd><input type=password name=password>",
        "<input type=\"submit\" value=\"Log In\">",
        // Test headers and cookies.
        "headers={'Authorization': 'Bearer valid_token'}",
        "headers={'Authorization': 'Bearer invalid_token'}",
        "assert response.json() == {\"auth\": \"Token 123\"}",
        "headers={\"set-cookie\": \"example-name=example-value\"}",
        "Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==",
        "\"Proxy-Authorization\": \"Basic dXNlcjpwYXNz\"",
        // URLs without a credential, and with test ones.
        "fetch('https://api.formspree.io/f/myform')",
        "fetch('https://api.formspree.io/f/xQwErTyUiOpAsDfGhJkLzX')",
        "https://abc123XYZdefGHI456jkl.execute-api.us-east-1.amazonaws.com/prod",
        "\"LOCATION\": \"redis://username:password@127.0.0.1:6379\"",
        "create_engine(\"postgresql+psycopg://postgres:postgres@localhost/db\")",
        "proxies = {\"http\": \"http://test:pass@localhost:8080\"}",
        "url = \"https://user:password123@example.org/\"",
        "url = \"http://{}:{}@{}:9000/path\"",
        "https://jo%40email.com:a%20secret@example.com",
        "fragment = \"#view=edit&token=hunter2\"",
        // Public hashes in known positions.
        "<link href=\"https://cdn.jsdelivr.net/npm/bootstrap@5.3.2/dist/css/bootstrap.min.css\" rel=\"stylesheet\" integrity=\"sha384-T3c6CoIi6uLrA9TneNEoa7RxnatzjcDSCmG1MXxSR1GAsXEV/Dwwykc2MPK8M2HN\" crossorigin=\"anonymous\">",
        "<script src=\"https://code.jquery.com/jquery-3.7.1.min.js\" integrity=\"sha256-/JqT3SQfawRcv/BIHPThkBvs0OEvtFFmqPF/lYI/Cxo=\" crossorigin=\"anonymous\"></script>",
        "\"integrity\": \"sha512-EZ1DYihju9pwVB+jg67ogm+Tmqc6JmhamRN6I4Zt8DfZu5lbcQGw3ozH9lFejSJgs/ibaef3A9PMXPLeefFGJg==\"",
        "bootstrap_css_integrity = 'sha384-xOolHFLEh07PJGoPkLv1IbcEPTNtaed2xpHsD9ESMhqIYd0nLMwNLD69Npy4HI+N'",
        "golang.org/x/oauth2 v0.15.0 h1:s8pnnxNVzjWyrvYdFUQq5llS1PX2zhPXmccZv99h7uQ=",
        "merged as 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    ] {
        assert_kept(text);
    }
}

/// A secret in code goes, and only its value: the quotes, the key, the markup, a URL's
/// scheme and host, a header's scheme and a cookie's name stay.
#[test]
fn only_the_secret_value_goes() {
    for (input, want) in [
        (
            "login(username='ops', password='Vq8#Lm2Zx9Kt')",
            "login(username='ops', password='[REDACTED:password]')",
        ),
        (
            "{\"user\": \"app\", \"password\": \"xK9#mP2$vL7@qR4!\"}",
            "{\"user\": \"app\", \"password\": \"[REDACTED:password]\"}",
        ),
        (
            "Password: <b>Qz7Lm2Xv9Kt4</b>",
            "Password: <b>[REDACTED:password]</b>",
        ),
        (
            "headers={'Authorization': 'Token 9f3b2c7d1e8a4f6b0c5d2e9a7f1b3c8d'}",
            "headers={'Authorization': 'Token [REDACTED:authorization]'}",
        ),
        (
            "Cookie: sessionid=Ck7Kq2Lz9Xm4Vr8Tn3Wp; theme=dark",
            "Cookie: sessionid=[REDACTED:cookie]; theme=dark",
        ),
        (
            "Set-Cookie: sid=Ck7Kq2Lz9Xm4Vr8Tn3Wp; Path=/; HttpOnly",
            "Set-Cookie: sid=[REDACTED:cookie]; Path=/; HttpOnly",
        ),
        (
            "postgres://app:Pg7rT2xQ9vLmWq@db.internal:5432/app",
            "postgres://app:[REDACTED:url_password]@db.internal:5432/app",
        ),
        (
            "requests.get(url, auth=('bob', 'Rq3Kq8Lz2Xm7Vr'))",
            "requests.get(url, auth=('bob', '[REDACTED:password]'))",
        ),
        (
            "- Password: Xv9#Kt4Lm2Qz",
            "- Password: [REDACTED:password]",
        ),
        (
            "fetch('https://api.example.com/v1/x?access_token=Tk5Qz8Lm2Xr7Vn4Hd&page=2')",
            "fetch('https://api.example.com/v1/x?access_token=[REDACTED:token]&page=2')",
        ),
    ] {
        assert_eq!(r(input), want, "input: {input}");
    }
}

/// A password manager's passwords go wherever they are: JSON, flags, prose, `key: value`.
#[test]
fn generated_passwords_go_in_every_syntax() {
    for pw in [
        "xK9#mP2$vL7@qR4!",
        "Vq8Lm2Zx9Kt4Wp",
        "xotnuv-2jakWi-fuqrop",
        "h7Gk2pQ9wZ3xT5mB",
        "3f8a2c9e7b1d4f6a5c0e8b2d4f6a8c0e",
    ] {
        for text in [
            format!("{{\"password\": \"{pw}\"}}"),
            format!("password = '{pw}'"),
            format!("--password {pw}"),
            format!("--password={pw}"),
            format!("password: {pw}"),
            format!("the password is {pw}"),
            format!("DB_PASSWORD={pw}"),
        ] {
            assert_redacted(&text, pw, "password");
        }
    }
}

/// Re-redaction rewrites stored rows with today's rules: a row an older redactor over-
/// redacted (its original is gone) is left as it is, never redacted further.
#[test]
fn over_redacted_rows_stay_as_they_are() {
    for stored in [
        "Password: [REDACTED:password] type=\"password\" name=\"password\">",
        "- Password: [REDACTED:password] Password]",
        "return self.password_hash == [REDACTED:password]",
        "print(f\"password: [REDACTED:password]}\")",
        "fetch('https://api.formspree.[REDACTED:high_entropy]')",
        "integrity=\"[REDACTED:high_entropy]\" crossorigin=\"anonymous\"",
        "headers={'Authorization': '[REDACTED:authorization]'}",
        "const apiKey = '[REDACTED:api_key]';",
        "Cookie: [REDACTED:cookie]",
    ] {
        assert_kept(stored);
    }
}
