package pg

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// LocalDataDir is the server's data directory on this machine, for what
// measures the disk under it (the environment, the disk sampler, the
// load's free-space check): a managed server's; or the data_directory a
// server given by connection string reports, when that path is here and
// belongs to it (its postmaster.pid names the server's port: the same
// path may be another server's, a container's). "" with the reason
// otherwise, always for a server on another machine. conn may be nil: it
// connects itself then.
func (t *Target) LocalDataDir(ctx context.Context, conn *pgx.Conn) (dir, why string) {
	if t.srv != nil {
		return t.srv.DataDir(), ""
	}
	if t.Remote() {
		// Its data_directory names a path of that machine; the same path
		// here is another disk.
		return "", "the server is on another machine"
	}
	if conn == nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		c, err := t.conn.ConnectStd(cctx)
		if err != nil {
			return "", "the server cannot be reached to ask"
		}
		defer c.Close(context.WithoutCancel(ctx))
		conn, ctx = c, cctx
	}
	var port string
	if err := conn.QueryRow(ctx, "select current_setting('data_directory'), current_setting('port')").Scan(&dir, &port); err != nil {
		return "", "reading data_directory needs superuser or pg_read_all_settings"
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", "its data directory " + dir + " is not visible here"
	}
	if b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid")); err == nil {
		if lines := strings.Split(string(b), "\n"); len(lines) > 3 && strings.TrimSpace(lines[3]) != port {
			return "", "the data directory " + dir + " here belongs to another server"
		}
	}
	return dir, ""
}
