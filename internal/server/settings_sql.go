package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/redact"
)

// The SQL of settings: ALTER SYSTEM and RESET statements quoted by the
// server, postgresql.auto.conf's values, reload and pending restarts.

// listQuoted names the settings whose values are lists of quoted items; a
// comma-separated value for them is passed as several literals.
func listQuoted(name string) bool {
	switch name {
	case "search_path", "temp_tablespaces", "shared_preload_libraries", "local_preload_libraries",
		"session_preload_libraries", "unix_socket_directories":
		return true
	}
	return false
}

// dequoteIdent removes SQL identifier quotes ("a""b" -> a"b): list elements
// are written as SHOW prints them, and PostgreSQL quotes them again itself.
func dequoteIdent(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return strings.ReplaceAll(v[1:len(v)-1], `""`, `"`)
	}
	return v
}

// alterSystemSQL builds ALTER SYSTEM SET with server-side quoting: it returns
// the statement text produced by format() with %I for identifiers and %L for values.
func alterSystemSQL(ctx context.Context, conn *pgx.Conn, name, value string) (string, error) {
	var args []any
	var f strings.Builder
	f.WriteString("ALTER SYSTEM SET ")
	first, second, dotted := strings.Cut(name, ".")
	if dotted {
		f.WriteString("%I.%I")
		args = append(args, first, second)
	} else {
		f.WriteString("%I")
		args = append(args, name)
	}
	f.WriteString(" TO ")
	values := []string{value}
	if listQuoted(name) && strings.Contains(value, ",") {
		values = values[:0]
		for _, v := range strings.Split(value, ",") {
			if v = strings.TrimSpace(v); v != "" {
				values = append(values, dequoteIdent(v))
			}
		}
	}
	for i, v := range values {
		if i > 0 {
			f.WriteString(", ")
		}
		f.WriteString("%L")
		args = append(args, v)
	}
	return formatSQL(ctx, conn, f.String(), args...)
}

// resetSQL builds ALTER SYSTEM RESET for name.
func resetSQL(ctx context.Context, conn *pgx.Conn, name string) (string, error) {
	if first, second, dotted := strings.Cut(name, "."); dotted {
		return formatSQL(ctx, conn, "ALTER SYSTEM RESET %I.%I", first, second)
	}
	return formatSQL(ctx, conn, "ALTER SYSTEM RESET %I", name)
}

func formatSQL(ctx context.Context, conn *pgx.Conn, format string, args ...any) (string, error) {
	ph := make([]string, 0, len(args)+1)
	params := make([]any, 0, len(args)+1)
	params = append(params, format)
	ph = append(ph, "$1::text")
	for i, a := range args {
		ph = append(ph, fmt.Sprintf("$%d::text", i+2))
		params = append(params, a)
	}
	var stmt string
	if err := conn.QueryRow(ctx, "SELECT format("+strings.Join(ph, ", ")+")", params...).Scan(&stmt); err != nil {
		return "", errs.Wrap(errs.KindConnect, err, "", "building the ALTER SYSTEM statement")
	}
	return stmt, nil
}

// scrub masks value inside msg when the setting may hold a secret.
func scrub(name, value, msg string) string {
	if masked := redact.SettingValue(name, value); masked != value && len(value) > 0 {
		return strings.ReplaceAll(msg, value, masked)
	}
	return msg
}

// pgMessage renders a server error compactly: message, detail and hint.
func pgMessage(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err.Error()
	}
	msg := pe.Message
	if pe.Detail != "" {
		msg += " (" + pe.Detail + ")"
	}
	if pe.Hint != "" {
		msg += "; " + pe.Hint
	}
	return msg
}

// autoValue reads the value postgresql.auto.conf holds for name, if any.
func autoValue(ctx context.Context, conn *pgx.Conn, name string) (string, bool, error) {
	var v string
	err := conn.QueryRow(ctx, `SELECT setting FROM pg_file_settings
		WHERE lower(name) = $1 AND sourcefile LIKE '%postgresql.auto.conf' ORDER BY seqno DESC LIMIT 1`, name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, errs.Wrap(errs.KindConnect, err, "reading pg_file_settings needs a superuser connection", "reading pg_file_settings for %s", name)
	}
	return v, true, nil
}

// reload calls pg_reload_conf() and waits until this session has re-read the
// configuration (pg_conf_load_time moves), so later reads see the new values.
func reload(ctx context.Context, conn *pgx.Conn) error {
	var before time.Time
	if err := conn.QueryRow(ctx, "SELECT pg_conf_load_time()").Scan(&before); err != nil {
		return errs.Wrap(errs.KindConnect, err, "", "reading pg_conf_load_time()")
	}
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_reload_conf()").Scan(&ok); err != nil || !ok {
		if err == nil {
			err = errors.New("pg_reload_conf() returned false")
		}
		return errs.Wrap(errs.KindConnect, err, "", "reloading the server configuration")
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var now time.Time
		if err := conn.QueryRow(ctx, "SELECT pg_conf_load_time()").Scan(&now); err != nil {
			return errs.Wrap(errs.KindConnect, err, "", "reading pg_conf_load_time()")
		}
		if now.After(before) {
			return nil
		}
		if time.Now().After(deadline) {
			return errs.New(errs.KindConnect, "check the server log", "the server did not reload its configuration within 15s")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// pendingRestart lists which of names have pending_restart set.
func pendingRestart(ctx context.Context, conn *pgx.Conn, names []string) ([]string, error) {
	rows, err := conn.Query(ctx, `SELECT lower(name) FROM pg_settings WHERE lower(name) = ANY($1) AND pending_restart ORDER BY 1`, names)
	if err != nil {
		return nil, errs.Wrap(errs.KindConnect, err, "", "reading pg_settings.pending_restart")
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
