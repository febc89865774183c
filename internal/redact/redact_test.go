package redact

import (
	"net/url"
	"strings"
	"testing"
)

func TestPatterns(t *testing.T) {
	cases := map[string]string{
		"host=h password=hunter2 user=u":            "host=h password=xxxxx user=u",
		"host=h password = 'se cret' user=u":        "host=h password = xxxxx user=u",
		"postgres://bob:hunter2@127.0.0.1:5432/db":  "postgres://bob:xxxxx@127.0.0.1:5432/db",
		"PGPASSWORD=hunter2 pgbench":                "PGPASSWORD=xxxxx pgbench",
		"dsn?sslpassword=abc&x=1":                   "dsn?sslpassword=xxxxx&x=1",
		"nothing secret here, host=h":               "nothing secret here, host=h",
		"postgres://bob@127.0.0.1/db (no password)": "postgres://bob@127.0.0.1/db (no password)",
	}
	for in, want := range cases {
		if got := Patterns(in); got != want {
			t.Errorf("Patterns(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactorKnownSecrets(t *testing.T) {
	r := New()
	r.AddSecret("abc") // too short: ignored, would mask ordinary text
	r.AddSecret("S3nt!nel-pw")
	r.AddSecret("S3nt!nel-pw") // twice is fine
	got := r.String("error: auth failed for S3nt!nel-pw at abc")
	if strings.Contains(got, "S3nt!nel-pw") || !strings.Contains(got, "abc") {
		t.Fatalf("got %q", got)
	}
	var nilR *Redactor
	if nilR.String("password=x1") != "password=xxxxx" {
		t.Fatal("nil redactor must still apply patterns")
	}
}

func TestSettingValue(t *testing.T) {
	if SettingValue("primary_conninfo", "host=x password=y") != Mask() {
		t.Fatal("conninfo not masked")
	}
	if SettingValue("ssl_passphrase_command", "echo x") != Mask() {
		t.Fatal("passphrase not masked")
	}
	if SettingValue("shared_buffers", "128MB") != "128MB" {
		t.Fatal("ordinary setting masked")
	}
}

// FuzzRedact: a password with awkward characters, in the URL, key=value and
// environment forms, never survives a redactor that was told the secret; the
// key=value form is also caught by patterns alone when quoted.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"p@ss:w/rd", "a b'c\\d", "%41%42%43", "pässwörd", "x;y&z=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pw string) {
		if len(pw) < 4 || strings.ContainsAny(pw, "\x00\n") {
			t.Skip()
		}
		r := New()
		r.AddSecret(pw)
		quoted := "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw) + "'"
		forms := []string{
			"host=127.0.0.1 password=" + quoted + " dbname=x",
			"postgres://u:" + url.PathEscape(pw) + "@127.0.0.1/db",
			"PGPASSWORD=" + pw,
			"failed: " + pw,
		}
		for _, in := range forms {
			out := r.String(in)
			if strings.Contains(out, pw) {
				t.Fatalf("secret %q survives in %q", pw, out)
			}
		}
		if out := Patterns(forms[0]); strings.Contains(out, quoted) {
			t.Fatalf("quoted kv password %q survives patterns: %q", quoted, out)
		}
	})
}
