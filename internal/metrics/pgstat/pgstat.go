// Package pgstat samples PostgreSQL's statistics views on connections of its
// own: pg_stat_database (the benchmark database and all databases),
// the checkpointer and background writer, WAL generation, and a wait-event
// profile from pg_stat_activity (what pgsentinel gives, without an
// extension). Query results go through pure parsers and aggregators, unit
// tested on captured results.
package pgstat

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Connector opens a new connection to the server under test.
type Connector func(ctx context.Context) (*pgx.Conn, error)

// AppName is the application_name of the samplers' connections; the
// wait-event profile leaves them out.
const AppName = "tunebench-sampler"

// reconnectDelay is the least time between connection attempts after a
// failure (the server may be restarting).
const reconnectDelay = 2 * time.Second

// session is a sampler's own connection, opened on first use and reopened
// after it broke.
type session struct {
	connect Connector
	conn    *pgx.Conn
	version int // server_version_num
	pid     uint32
	dbname  string
	retryAt time.Time
}

func (s *session) get(ctx context.Context) (*pgx.Conn, error) {
	if s.conn != nil && !s.conn.IsClosed() {
		return s.conn, nil
	}
	if s.conn != nil {
		_ = s.conn.Close(ctx)
		s.conn = nil
	}
	if now := time.Now(); now.Before(s.retryAt) {
		return nil, fmt.Errorf("not connected (next attempt in %v)", s.retryAt.Sub(now).Round(time.Millisecond))
	}
	c, err := s.connect(ctx)
	if err == nil {
		err = s.setup(ctx, c)
		if err != nil {
			_ = c.Close(ctx)
		}
	}
	if err != nil {
		s.retryAt = time.Now().Add(reconnectDelay)
		return nil, err
	}
	s.conn = c
	return c, nil
}

func (s *session) setup(ctx context.Context, c *pgx.Conn) error {
	if _, err := c.Exec(ctx, "SET application_name = '"+AppName+"'"); err != nil {
		return err
	}
	return c.QueryRow(ctx, "SELECT current_setting('server_version_num')::int, pg_backend_pid(), current_database()").
		Scan(&s.version, &s.pid, &s.dbname)
}

// Close closes the connection.
func (s *session) Close() error {
	if s.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.conn.Close(ctx)
	s.conn = nil
	return err
}

// BackendPID opens the session if needed and returns its server process id
// (whose parent is the postmaster).
func (s *session) BackendPID(ctx context.Context) (int, error) {
	if _, err := s.get(ctx); err != nil {
		return 0, err
	}
	return int(s.pid), nil
}

// toFloat converts a numeric column value (int2/4/8, oid, float4/8, numeric).
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case pgtype.Numeric:
		f, err := x.Float64Value()
		if err != nil || !f.Valid {
			return 0, false
		}
		return f.Float64, true
	}
	return 0, false
}

// rowMaps runs a query and returns every row's numeric columns by name
// (non-numeric and NULL columns are left out) plus its text columns.
func rowMaps(ctx context.Context, c *pgx.Conn, sql string, args ...any) ([]map[string]float64, []map[string]string, error) {
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		return nil, nil, err
	}
	maps, err := pgx.CollectRows(rows, pgx.RowToMap)
	if err != nil {
		return nil, nil, err
	}
	nums := make([]map[string]float64, len(maps))
	texts := make([]map[string]string, len(maps))
	for i, m := range maps {
		nums[i], texts[i] = map[string]float64{}, map[string]string{}
		for k, v := range m {
			if f, ok := toFloat(v); ok {
				nums[i][k] = f
			} else if s, ok := v.(string); ok {
				texts[i][k] = s
			}
		}
	}
	return nums, texts, nil
}

// counter turns a cumulative counter into per-second rates and a running
// total since the first reading. A counter that goes backwards (statistics
// reset, crash restart) starts over: that interval gives no rate and adds
// nothing to the total.
type counter struct {
	prev  float64
	have  bool
	total float64
}

// update returns the rate over secs (ok false on the first reading, a reset
// or secs <= 0).
func (c *counter) update(cur, secs float64) (rate float64, ok bool) {
	prev, had := c.prev, c.have
	c.prev, c.have = cur, true
	if !had || cur < prev || math.IsNaN(cur) {
		return 0, false
	}
	c.total += cur - prev
	if secs <= 0 {
		return 0, false
	}
	return (cur - prev) / secs, true
}

var errNoRows = errors.New("no rows")
