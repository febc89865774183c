//go:build linux

package pg

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tunebench/tunebench/internal/driver"
)

// trickle is a net.Conn that returns at most max bytes per Read.
type trickle struct {
	net.Conn
	r   io.Reader
	max int
}

func (t *trickle) Read(p []byte) (int, error) {
	if len(p) > t.max {
		p = p[:t.max]
	}
	return t.r.Read(p)
}

func msg(typ byte, body []byte) []byte {
	b := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(4+len(body)))
	return append(b, body...)
}

// Messages split over many reads, and one larger than the buffer.
func TestRepliesNext(t *testing.T) {
	big := bytes.Repeat([]byte{'x'}, 3*repliesBuf)
	var stream []byte
	stream = append(stream, msg('2', nil)...)
	stream = append(stream, msg('N', big)...)
	stream = append(stream, msg('D', []byte{0, 1, 0, 0, 0, 1, '7'})...)
	stream = append(stream, msg('Z', []byte{'I'})...)
	for _, c := range []net.Conn{&trickle{r: bytes.NewReader(stream), max: 1}, &trickle{r: bytes.NewReader(stream), max: 5000}} {
		var r Replies
		want := []struct {
			typ  byte
			body []byte
		}{{'2', nil}, {'N', big}, {'D', []byte{0, 1, 0, 0, 0, 1, '7'}}, {'Z', []byte{'I'}}}
		for _, w := range want {
			typ, body, err := r.next(c)
			if err != nil || typ != w.typ || !bytes.Equal(body, w.body) {
				t.Fatalf("got %q %q, %v; want %q %q", typ, body, err, w.typ, w.body)
			}
		}
		if _, _, err := r.next(c); err != io.ErrUnexpectedEOF {
			t.Fatalf("after the stream: %v, want io.ErrUnexpectedEOF", err)
		}
	}

	for _, bad := range [][]byte{{'2', 0, 0, 0, 3}, {'D', 0x7f, 0, 0, 0}} {
		var r Replies
		if _, _, err := r.next(&trickle{r: bytes.NewReader(bad), max: 1}); !errors.Is(err, ErrProtocol) {
			t.Fatalf("length % x: %v, want ErrProtocol", bad[1:], err)
		}
	}
}

func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func errorMsg(severity, code, text string) []byte {
	var b []byte
	for _, f := range []struct {
		k byte
		v string
	}{{'S', severity}, {'V', severity}, {'C', code}, {'M', text}} {
		b = append(append(append(b, f.k), f.v...), 0)
	}
	return msg('E', append(b, 0))
}

// UntilReady on crafted replies: what it returns and whether it closes the
// connection.
func TestRepliesUntilReadyCrafted(t *testing.T) {
	ok := join(msg('2', nil), msg('D', []byte{0, 1, 0, 0, 0, 1, '7'}), msg('C', []byte("SELECT 1\x00")), msg('Z', []byte{'I'}))
	cases := []struct {
		name    string
		stream  []byte
		eof     bool   // the server closes after the stream
		code    string // SQLSTATE of the PgError wanted, "" for none
		connErr bool   // a connection error wanted (driver.IsConnError)
		closed  bool
	}{
		{name: "results", stream: ok},
		{name: "error then ready", stream: append(errorMsg("ERROR", "40001", "could not serialize"), msg('Z', []byte{'E'})...), code: "40001"},
		{name: "two errors: the first", stream: join(errorMsg("ERROR", "22012", "division by zero"), errorMsg("ERROR", "40P01", "deadlock"), msg('Z', []byte{'E'})), code: "22012"},
		{name: "error then gone", stream: errorMsg("ERROR", "22012", "division by zero"), eof: true, code: "22012", closed: true},
		{name: "fatal", stream: append(errorMsg("ERROR", "22012", "x"), errorMsg("FATAL", "57P01", "terminating connection")...), eof: true, code: "57P01", closed: true},
		{name: "unknown message", stream: msg('R', []byte{0, 0, 0, 0}), connErr: true, closed: true},
		{name: "too long", stream: []byte{'D', 0x7f, 0, 0, 0}, connErr: true, closed: true},
		{name: "end inside a message", stream: msg('D', []byte{0, 1, 0, 0})[:6], eof: true, connErr: true, closed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dc, peer := pair(t)
			cfg, err := pgconn.ParseConfig("host=127.0.0.1 sslmode=disable")
			if err != nil {
				t.Fatal(err)
			}
			pc, err := pgconn.Construct(&pgconn.HijackedConn{Conn: dc, Config: cfg, TxStatus: 'I', ParameterStatuses: map[string]string{}})
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				_, _ = peer.Write(tc.stream)
				if tc.eof {
					peer.Close()
				}
			}()
			var r Replies
			var got error
			within(t, 5*time.Second, "UntilReady", func() { got = r.UntilReady(pc) })
			var pe *pgconn.PgError
			switch {
			case tc.code != "":
				if !errors.As(got, &pe) || pe.Code != tc.code {
					t.Errorf("got %v, want SQLSTATE %s", got, tc.code)
				}
			case tc.connErr:
				if got == nil || !driver.IsConnError(got) {
					t.Errorf("got %v, want a connection error", got)
				}
			default:
				if got != nil {
					t.Errorf("got %v, want nil", got)
				}
			}
			if pc.IsClosed() != tc.closed {
				t.Errorf("closed %v, want %v", pc.IsClosed(), tc.closed)
			}
		})
	}
}

// Against the server: results, an error that leaves the connection usable,
// an error inside a pipeline, and a FATAL error that closes it.
func TestRepliesUntilReady(t *testing.T) {
	conn := connect(t, target(t, shared.Server(t)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pc := conn.PgConn()
	if _, err := pc.Prepare(ctx, "div", "SELECT 100 / $1::int", nil); err != nil {
		t.Fatal(err)
	}
	var r Replies
	fe := pc.Frontend()
	param := make([]byte, 4)
	bind := &pgproto3.Bind{PreparedStatement: "div", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{param}}
	send := func(divisors ...int32) {
		t.Helper()
		for _, d := range divisors {
			p := make([]byte, 4)
			binary.BigEndian.PutUint32(p, uint32(d))
			b := *bind
			b.Parameters = [][]byte{p}
			fe.SendBind(&b)
			fe.SendExecute(&pgproto3.Execute{})
		}
		fe.SendSync(&pgproto3.Sync{})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
	}

	for i := 0; i < 3; i++ {
		send(4)
		if err := r.UntilReady(pc); err != nil {
			t.Fatalf("round trip %d: %v", i, err)
		}
	}
	send(0)
	var pe *pgconn.PgError
	if err := r.UntilReady(pc); !errors.As(err, &pe) || pe.Code != "22012" {
		t.Fatalf("division by zero: %v", err)
	}
	// A pipeline whose second statement fails: the first error, and the
	// rest skipped up to the Sync.
	send(5, 0, 0, 2)
	if err := r.UntilReady(pc); !errors.As(err, &pe) || pe.Code != "22012" {
		t.Fatalf("pipeline: %v", err)
	}
	send(1)
	if err := r.UntilReady(pc); err != nil || pc.IsClosed() {
		t.Fatalf("after the errors: %v (closed %v)", err, pc.IsClosed())
	}
	// The simple query protocol (ROLLBACK after an error).
	fe.SendQuery(&pgproto3.Query{String: "ROLLBACK"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := r.UntilReady(pc); err != nil {
		t.Fatalf("rollback: %v", err)
	}

	// FATAL: the backend terminates itself.
	fe.SendQuery(&pgproto3.Query{String: "SELECT pg_terminate_backend(pg_backend_pid())"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	err := r.UntilReady(pc)
	if !errors.As(err, &pe) || pe.Code != "57P01" || !strings.EqualFold(pe.Severity, "FATAL") {
		t.Fatalf("terminated: %v", err)
	}
	if !pc.IsClosed() {
		t.Fatal("the connection is not closed after a FATAL error")
	}
}

// dataRow is a DataRow body: each column's value, nil for NULL.
func dataRow(cols ...[]byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(cols)))
	for _, c := range cols {
		if c == nil {
			b = binary.BigEndian.AppendUint32(b, 0xffffffff)
			continue
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(c)))
		b = append(b, c...)
	}
	return msg('D', b)
}

func int4(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// Collect records each statement's rows, its first row's first two int4
// columns (NULLs and other widths read as 0) and, with KeepRow, its last
// row, and the transaction status of ReadyForQuery.
func TestRepliesCollect(t *testing.T) {
	stream := join(
		msg('2', nil), msg('n', nil), msg('C', []byte("BEGIN\x00")), // BEGIN: no rows
		msg('2', nil), dataRow(int4(7), int4(-3), []byte("text")), dataRow(int4(8), int4(9)), msg('C', []byte("SELECT 2\x00")),
		msg('2', nil), dataRow(nil, []byte("12345678"), int4(5)), msg('C', []byte("SELECT 1\x00")),
		msg('2', nil), dataRow(int4(1)), msg('C', []byte("SELECT 1\x00")), // a fourth statement, not recorded
		msg('Z', []byte{'T'}))
	dc, peer := pair(t)
	cfg, err := pgconn.ParseConfig("host=127.0.0.1 sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	pc, err := pgconn.Construct(&pgconn.HijackedConn{Conn: dc, Config: cfg, TxStatus: 'I', ParameterStatuses: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = peer.Write(stream) }()
	var r Replies
	r.Reset()
	r.KeepRow = true
	res := make([]Result, 3)
	res[0].Rows = 99 // stale: reset by Collect
	res[0].Row = []byte{1, 2, 3}
	var got error
	within(t, 5*time.Second, "Collect", func() { got = r.Collect(pc, res) })
	if got != nil {
		t.Fatal(got)
	}
	want := []Result{{Rows: 0}, {Rows: 2, V: [2]int32{7, -3}}, {Rows: 1, V: [2]int32{0, 0}}}
	for i := range want {
		if res[i].Rows != want[i].Rows || res[i].V != want[i].V {
			t.Errorf("statement %d: %+v, want %+v", i, res[i], want[i])
		}
	}
	// The last row of each statement as it came (KeepRow).
	if len(res[0].Row) != 0 {
		t.Errorf("statement 0 has no row, kept % x", res[0].Row)
	}
	if vs := RowValues(res[1].Row, nil); len(vs) != 2 || string(vs[0]) != "\x00\x00\x00\x08" || string(vs[1]) != "\x00\x00\x00\x09" {
		t.Errorf("statement 1's last row: %q", vs)
	}
	if vs := RowValues(res[2].Row, nil); len(vs) != 3 || vs[0] != nil || string(vs[1]) != "12345678" {
		t.Errorf("statement 2's first row (a NULL first): %q", vs)
	}
	if r.TxStatus() != 'T' {
		t.Errorf("transaction status %q, want T", r.TxStatus())
	}
}
