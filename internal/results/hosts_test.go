package results

import (
	"strings"
	"testing"
)

// The database server's processes are one row whatever the database
// (pg.proc_*, mariadb.proc_*).
func TestHostBlocksServerProcesses(t *testing.T) {
	for _, db := range []string{"pg", "mariadb"} {
		s := &Summary{Hosts: []Host{
			{Role: HostDriver, Source: "local /proc", Means: map[string]float64{"sys.cpu_user_pct": 40}},
			{Role: HostServer, Source: "local /proc", SameMachine: true, Means: map[string]float64{db + ".proc_cpu_pct": 137, db + ".proc_rss_bytes": 300 << 20, "x.y.proc_cpu_pct": 1}},
		}}
		var text strings.Builder
		for _, b := range HostBlocks(s) {
			if b.Table != nil {
				for _, r := range b.Table.Rows {
					text.WriteString(strings.Join(r, " | ") + "\n")
				}
			}
		}
		if !strings.Contains(text.String(), "database server processes CPU | 137% of a CPU") || !strings.Contains(text.String(), "database server processes memory | 300.0 MiB") {
			t.Errorf("%s:\n%s", db, text.String())
		}
	}
}
