package pg

import "github.com/tunebench/tunebench/internal/results"

const product = "PostgreSQL"

// Charts are PostgreSQL's chart vocabulary (target.Charter): the server
// processes (metrics/system.PGProcs) in the report's process CPU, disk and
// memory charts, and the pg_stat series (metrics/pgstat) in charts of
// their own.
func (Driver) Charts() []results.ChartDef {
	const mb = 1e-6
	return []results.ChartDef{
		{Product: product, Marks: "pg.checkpoints"},
		{Product: product, Title: "Process CPU", Series: []results.ChartSeries{{Name: "pg.proc_cpu_pct", Label: "PostgreSQL processes"}}},
		{Product: product, Title: "Wait events (sampled pg_stat_activity)", After: "Process CPU", YLabel: "average active sessions", Scale: 1, Stacked: true, Prefix: "wait.", MaxLayers: 8},
		{Product: product, Title: "Disk throughput (data directory device)", Series: []results.ChartSeries{
			{Name: "pg.proc_read_bytes_s", Label: "PostgreSQL read"}, {Name: "pg.proc_write_bytes_s", Label: "PostgreSQL write"}}},
		{Product: product, Title: "WAL and temporary files", After: "Disk utilisation", YLabel: "MB/s", Scale: mb, Series: []results.ChartSeries{
			{Name: "pg.wal_bytes_s", Label: "WAL written"}, {Name: "pg.temp_bytes_s", Label: "temp files"}}},
		{Product: product, Title: "Buffers written", After: "WAL and temporary files", YLabel: "buffers per second", Scale: 1, Series: []results.ChartSeries{
			{Name: "pg.buffers_checkpoint_s", Label: "checkpointer"}, {Name: "pg.buffers_clean_s", Label: "background writer"}, {Name: "pg.buffers_backend_s", Label: "backends"}}},
		{Product: product, Title: "Database transactions", After: "Buffers written", YLabel: "per second", Scale: 1, Series: []results.ChartSeries{
			{Name: "pg.commits_s", Label: "commits"}, {Name: "pg.rollbacks_s", Label: "rollbacks"}}},
		{Product: product, Title: "Buffer cache", After: "Database transactions", YLabel: "blocks per second", Scale: 1, Series: []results.ChartSeries{
			{Name: "pg.blks_hit_s", Label: "hit"}, {Name: "pg.blks_read_s", Label: "read"}}},
		{Product: product, Title: "Memory", Series: []results.ChartSeries{{Name: "pg.proc_rss_bytes", Label: "PostgreSQL RSS"}}},
	}
}
