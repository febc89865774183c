//go:build linux

package pg

import (
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// loopConn serves the same bytes over and over (a server that always
// answers the same round trip).
type loopConn struct {
	net.Conn
	b   []byte
	off int
}

func (c *loopConn) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], c.b[c.off:])
		n += k
		c.off = (c.off + k) % len(c.b)
		if c.off == 0 {
			break // one round trip a read, as a socket gives it
		}
	}
	return n, nil
}

// BenchmarkCollect is the reply reader's own cost for a select-only round
// trip (BindComplete, one DataRow of one int4, CommandComplete,
// ReadyForQuery), the socket left out.
func BenchmarkCollect(b *testing.B) {
	trip := join(msg('2', nil), msg('D', []byte{0, 1, 0, 0, 0, 4, 0, 0, 0x30, 0x39}), msg('C', []byte("SELECT 1\x00")), msg('Z', []byte{'I'}))
	cfg, err := pgconn.ParseConfig("host=127.0.0.1 sslmode=disable")
	if err != nil {
		b.Fatal(err)
	}
	pc, err := pgconn.Construct(&pgconn.HijackedConn{Conn: &loopConn{b: trip}, Config: cfg, TxStatus: 'I', ParameterStatuses: map[string]string{}})
	if err != nil {
		b.Fatal(err)
	}
	var r Replies
	var res [16]Result
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Collect(pc, res[:1]); err != nil || res[0].Rows != 1 || res[0].V[0] != 12345 {
			b.Fatalf("%v %+v", err, res[0])
		}
	}
}
