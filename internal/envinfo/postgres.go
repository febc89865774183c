package envinfo

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/redact"
)

// Querier is the part of *pgx.Conn (and of *pgxpool.Pool) PostgresInfo uses.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Postgres describes the PostgreSQL server a run measured.
type Postgres struct {
	Version          string `json:"version"`            // version(): full version and build string
	ServerVersionNum int    `json:"server_version_num"` // e.g. 160004
	Database         string `json:"database"`           // current_database()
	// DataDirectory is empty when the role may not read it (it needs
	// superuser or pg_read_all_settings).
	DataDirectory string `json:"data_directory,omitempty"`
	// Settings holds every setting whose source is neither 'default' nor
	// 'override' in pg_settings, name -> value as current_setting shows it
	// (with its unit, e.g. "128MB"). Values of settings whose names suggest
	// secrets (…pass…, …key…, …conninfo…) are masked, and password-shaped
	// text is masked in all values.
	Settings map[string]string `json:"settings"`
	// TLS is the negotiated TLS of this connection, nil for plaintext or when
	// pg_stat_ssl cannot be read.
	TLS *TLS `json:"tls,omitempty"`
}

// TLS is the protocol version and cipher of an encrypted connection.
type TLS struct {
	Version string `json:"version"`
	Cipher  string `json:"cipher"`
}

const settingsQuery = `SELECT name, coalesce(current_setting(name, true), setting || coalesce(unit, ''))
FROM pg_settings
WHERE source NOT IN ('default', 'override')
ORDER BY name`

// PostgresInfo reads the server's version and non-default settings through
// conn. Reading data_directory and pg_stat_ssl may be refused to an
// unprivileged role; that is tolerated (the fields stay empty).
func PostgresInfo(ctx context.Context, conn Querier) (*Postgres, error) {
	pg := &Postgres{Settings: map[string]string{}}
	err := conn.QueryRow(ctx,
		`SELECT version(), current_setting('server_version_num')::int, current_database()`).
		Scan(&pg.Version, &pg.ServerVersionNum, &pg.Database)
	if err != nil {
		return nil, errs.Wrap(errs.KindConnect, err, "", "read PostgreSQL version")
	}

	var dir string
	if err := conn.QueryRow(ctx, `SELECT current_setting('data_directory')`).Scan(&dir); err == nil {
		pg.DataDirectory = dir
	}

	rows, err := conn.Query(ctx, settingsQuery)
	if err != nil {
		return nil, errs.Wrap(errs.KindConnect, err, "", "read PostgreSQL settings")
	}
	var name, value string
	_, err = pgx.ForEachRow(rows, []any{&name, &value}, func() error {
		pg.Settings[name] = settingValue(name, value)
		return nil
	})
	if err != nil {
		return nil, errs.Wrap(errs.KindConnect, err, "", "read PostgreSQL settings")
	}

	var tls TLS
	err = conn.QueryRow(ctx, `SELECT coalesce(version, ''), coalesce(cipher, '')
FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl`).Scan(&tls.Version, &tls.Cipher)
	if err == nil {
		pg.TLS = &tls
	}
	return pg, nil
}

// settingValue redacts a setting's value for the snapshot: masked entirely
// when the name suggests a secret, password-shaped parts masked otherwise.
func settingValue(name, value string) string {
	return redact.Patterns(redact.SettingValue(name, value))
}
