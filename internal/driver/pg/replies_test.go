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
			typ byte
			n   int
		}{{'2', 0}, {'N', len(big)}, {'D', 7}, {'Z', 1}}
		for _, w := range want {
			typ, body, err := r.next(c)
			if err != nil || typ != w.typ || len(body) != w.n {
				t.Fatalf("got %q (%d bytes), %v; want %q (%d bytes)", typ, len(body), err, w.typ, w.n)
			}
		}
		if _, _, err := r.next(c); err != io.ErrUnexpectedEOF {
			t.Fatalf("after the stream: %v, want io.ErrUnexpectedEOF", err)
		}
	}

	var r Replies
	bad := &trickle{r: bytes.NewReader([]byte{'2', 0, 0, 0, 3}), max: 1}
	if _, _, err := r.next(bad); !errors.Is(err, ErrProtocol) {
		t.Fatalf("length 3: %v, want ErrProtocol", err)
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
