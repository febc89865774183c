package tpcb

import (
	"testing"

	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/target/mariadb"
	pgt "github.com/tunebench/tunebench/internal/target/pg"
)

// --follow-server auto follows the server's processes for select-only
// where the target's sessions gain from it (PostgreSQL), not on MariaDB;
// on and off are the user's.
func TestFollowServer(t *testing.T) {
	pg, md := target.FollowsServer(pgt.Sessions{}), target.FollowsServer(&mariadb.Target{})
	for _, c := range []struct {
		mode, script string
		gains, want  bool
	}{
		{"auto", ScriptSelectOnly, pg, true},
		{"auto", ScriptSelectOnly, md, false},
		{"auto", ScriptTPCB, pg, false},
		{"on", ScriptTPCB, md, true},
		{"off", ScriptSelectOnly, pg, false},
	} {
		if got := followServer(c.mode, c.script, c.gains); got != c.want {
			t.Errorf("%s %s gains %v: %v, want %v", c.mode, c.script, c.gains, got, c.want)
		}
	}
}
