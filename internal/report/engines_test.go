package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/store"
)

// engineRun is a run on a named target of an engine, with the notes its
// target recorded.
func engineRun(id int64, name string, mariadb bool, settings map[string]string) *runData {
	env := &envinfo.Snapshot{Target: &envinfo.NamedTarget{Name: name}}
	if mariadb {
		env.Target.Engine = "mariadb"
		env.Database = &envinfo.Database{Product: "MariaDB", Version: "10.11", Settings: settings}
		env.Notes = []envinfo.Note{{Topic: envinfo.NoteIsolation, Text: "repeatable read"}, {Topic: envinfo.NoteTransactions, Text: "Com_commit"}}
	} else {
		env.Target.Engine = "postgres"
		env.Postgres = &envinfo.Postgres{Version: "PostgreSQL 17", Settings: settings}
		env.Notes = []envinfo.Note{{Topic: envinfo.NoteIsolation, Text: "read committed"}, {Topic: envinfo.NoteTransactions, Text: "xact_commit"}, {Topic: "vacuum", Text: "autovacuum"}}
	}
	return &runData{Run: &store.Run{ID: id}, Env: env, Kind: kindDB}
}

func TestReportEngines(t *testing.T) {
	d := &dataset{Runs: []*runData{
		engineRun(1, "pg-default", false, map[string]string{"max_wal_size": "1GB"}),
		engineRun(2, "pg-tuned", false, map[string]string{"max_wal_size": "1GB", "shared_buffers": "512MB"}),
		engineRun(3, "mariadb-default", true, map[string]string{"port": "3307"}),
		engineRun(4, "mariadb-tuned", true, map[string]string{"port": "3307", "innodb_flush_log_at_trx_commit": "2"}),
	}}
	v := engines(d)
	if v == nil {
		t.Fatal("no engines section for runs on two engines")
	}
	if want := []string{"PostgreSQL: pg-default, pg-tuned", "MariaDB: mariadb-default, mariadb-tuned"}; strings.Join(v.Columns, "|") != strings.Join(want, "|") {
		t.Errorf("columns %q, want %q", v.Columns, want)
	}
	if len(v.Rows) != 3 || v.Rows[0].Topic != "Default isolation level" || v.Rows[0].Texts[0] != "read committed" || v.Rows[0].Texts[1] != "repeatable read" {
		t.Errorf("rows %+v", v.Rows)
	}
	if r := v.Rows[2]; r.Topic != "vacuum" || r.Texts[1] != "(not recorded)" {
		t.Errorf("a topic one engine gave: %+v", r)
	}
	if engines(&dataset{Runs: d.Runs[:2]}) != nil {
		t.Error("an engines section for runs on one engine")
	}

	// The settings: a table per product, each over its own runs (a
	// MariaDB variable is not "at its default" on PostgreSQL).
	_, settings, _ := environment(d)
	if len(settings) != 2 || settings[0].Of != "PostgreSQL" || settings[1].Of != "MariaDB" {
		t.Fatalf("settings tables %+v", settings)
	}
	for _, row := range settings[0].Rows {
		if row.Name == "port" || row.Name == "innodb_flush_log_at_trx_commit" {
			t.Errorf("a MariaDB variable in the PostgreSQL table: %+v", row)
		}
	}
	if row := settings[1].Rows[0]; row.Name != "innodb_flush_log_at_trx_commit" || !row.Differs {
		t.Errorf("the varied MariaDB variable does not come first: %+v", settings[1].Rows)
	}

	// Both in the HTML, once.
	r := &Report{Title: "engines", Settings: settings, Engines: v}
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{`id="engines"`, "Default isolation level", "PostgreSQL settings that are not at their defaults", "MariaDB settings that are not at their defaults"} {
		if strings.Count(html, want) != 1 {
			t.Errorf("the report has %q %d times, want once", want, strings.Count(html, want))
		}
	}
}
