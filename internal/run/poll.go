package run

import (
	"math"
	"time"
)

// pollMode is how a multiplexed thread waits: poller.wait (a timeout in
// whole milliseconds), or poller.waitFine (to the microsecond) as an
// ordinary or a raw system call, or a raw wait with the thread's timer
// slack as it is (pollRawCoarse: the closed loop waits for replies, not
// for a schedule).
type pollMode int

const (
	pollMs pollMode = iota
	pollFine
	pollRaw
	pollRawCoarse
)

// waitForever is the timeout of a wait that has no deadline (poller.waitFine):
// no computed timeout (a deadline minus the time, negative once passed) is
// ever that.
const waitForever time.Duration = math.MinInt64
