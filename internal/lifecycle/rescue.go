package lifecycle

import (
	"fmt"
	"os"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
)

// rescueDirs are where a run that the store failed to save is written
// when the store's own directory cannot take it (a full filesystem): the
// working directory, then the temporary directory.
func rescueDirs(req *Request) []string {
	var dirs []string
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, wd)
	}
	tmp := ""
	if req.Getenv != nil {
		tmp = req.Getenv("TMPDIR")
	}
	if tmp == "" {
		tmp = "/tmp"
	}
	return append(dirs, tmp)
}

// finish is the error a run ends with. A run whose save failed but whose
// result went to a rescue file (req.rescued) ends with the run's own exit
// code (own's kind: interrupted, a failed check, errors), or the save's
// when the run had none, and a message that says where the result is.
func (req *Request) finish(sum *results.Summary, own error) (*results.Summary, error) {
	if req.rescued == nil {
		return sum, own
	}
	return sum, rescuedExit(req.rescued, sum, own)
}

func rescuedExit(saveErr error, sum *results.Summary, own error) error {
	what := "the run"
	if sum != nil && sum.Status != "" {
		what = fmt.Sprintf("the run (status %s)", sum.Status)
	}
	kind := errs.KindOf(saveErr)
	if own != nil {
		kind = errs.KindOf(own)
		switch kind {
		case errs.KindInterrupted, errs.KindCheckFailed, errs.KindRunErrors:
			// These errors name the run they were stored as; here the
			// status (and the summary printed or rescued) says the same.
		default:
			what = own.Error() + "; " + what
		}
	}
	if _, ok := store.RescuedTo(saveErr); !ok {
		return saveErr
	}
	return &errs.Error{Kind: kind, Msg: what + " was not stored", Err: saveErr}
}
