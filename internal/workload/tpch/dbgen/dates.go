package dbgen

import "time"

// Dates are day numbers from 1992-01-01 (STARTDATE) over the 2,557 days to
// 1998-12-31; CURRENTDATE, which splits shipped from open and returned from
// not, is 1995-06-17 (TPC-H clause 4.2.3).
const dateRange = 2557

var (
	epoch       = time.Date(1992, 1, 1, 0, 0, 0, 0, time.UTC)
	currentDate = int32(time.Date(1995, 6, 17, 0, 0, 0, 0, time.UTC).Sub(epoch).Hours() / 24)
	dateText    = func() (d [dateRange][10]byte) {
		for i := range d {
			copy(d[i][:], epoch.AddDate(0, 0, i).Format(time.DateOnly))
		}
		return d
	}()
)

// inPast tells whether day d is on or before CURRENTDATE.
func inPast(d int32) bool { return d <= currentDate }
