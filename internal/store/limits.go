package store

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/scion-dev/scion/internal/pkg"
)

// Limits bound what one repository's remote and packages may make Scion
// hold, whatever its server sends. Zero fields take DefaultLimits'.
type Limits struct {
	// FetchBytes bounds the bytes received in one exchange with the
	// remote (its refs, a pack).
	FetchBytes int64
	// PackageBytes bounds the total size of a package's files.
	PackageBytes int64
	// PackageFiles bounds the number of files of a package.
	PackageFiles int
	// FileBytes bounds the size of one file of a package.
	FileBytes int64
}

// DefaultLimits are the limits of a repository that sets none: far above
// any configuration package, far below what would fill a controller's
// disk or memory.
var DefaultLimits = Limits{FetchBytes: 1 << 30, PackageBytes: 64 << 20, PackageFiles: 10000, FileBytes: 16 << 20}

// CheckPackage fails with a LimitError when the files of a package
// (pkgPath, for the message) go over a limit: what a write must refuse,
// as a read would.
func (l Limits) CheckPackage(pkgPath string, files map[string][]byte) error {
	l = l.orDefaults()
	var total int64
	n := 0
	for _, name := range slices.Sorted(maps.Keys(files)) {
		n++
		total += int64(len(files[name]))
		if err := l.checkFile(pkgPath, name, int64(len(files[name])), n, total); err != nil {
			return err
		}
	}
	return nil
}

// checkFile checks one more file of a package: name of size bytes, the
// package's count-th file, total bytes so far.
func (l Limits) checkFile(pkgPath, name string, size int64, count int, total int64) error {
	switch {
	case count > l.PackageFiles:
		return &LimitError{What: fmt.Sprintf("package %s (more than %d files)", pkgPath, l.PackageFiles), Limit: "max-package-files", Value: int64(l.PackageFiles)}
	case size > l.FileBytes:
		return &LimitError{What: fmt.Sprintf("file %s of package %s (%s)", name, pkgPath, Quantity(size)), Limit: "max-file-size", Value: l.FileBytes}
	case total > l.PackageBytes:
		return &LimitError{What: fmt.Sprintf("package %s (more than %s of files)", pkgPath, Quantity(l.PackageBytes)), Limit: "max-package-size", Value: l.PackageBytes}
	}
	return nil
}

func (l Limits) orDefaults() Limits {
	if l.FetchBytes <= 0 {
		l.FetchBytes = DefaultLimits.FetchBytes
	}
	if l.PackageBytes <= 0 {
		l.PackageBytes = DefaultLimits.PackageBytes
	}
	if l.PackageFiles <= 0 {
		l.PackageFiles = DefaultLimits.PackageFiles
	}
	if l.FileBytes <= 0 {
		l.FileBytes = DefaultLimits.FileBytes
	}
	return l
}

// ErrLimit is matched by the errors of something over a limit.
var ErrLimit = errors.New("over a limit")

// LimitError says what went over which limit. Retrying does not help
// until the remote or the package changes: reconcilers stall on it
// (StallReason).
type LimitError struct {
	// What went over, such as "file crds/huge.yaml (20Mi)".
	What string
	// Limit is the limit's name, as the controller's flag says it
	// (max-file-size), and Value its value.
	Limit string
	Value int64
}

// LimitExceededReason is the reason of a condition of an object stalled
// on a LimitError.
const LimitExceededReason = "LimitExceeded"

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s is over the %s limit of %s", e.What, e.Limit, Quantity(e.Value))
}

// Is matches ErrLimit.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// StallReason makes reconcilers stall on it (reconciler.Classify).
func (e *LimitError) StallReason() string { return LimitExceededReason }

// Unreadable says whether err is about a package's content (a path no
// checkout holds, a file over a limit), which no retry reading the same
// commit changes: the package must change.
func Unreadable(err error) bool {
	var pathErr *pkg.PathError
	return errors.As(err, &pathErr) || errors.Is(err, ErrLimit)
}

// Shorten cuts text that may carry a user's or a remote's words (a value,
// what a server sent) to at most n bytes, at a character boundary, saying
// how much was left out: such text goes into errors, conditions, events
// and logs.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes more)", s[:cut], len(s)-cut)
}

// maxRemoteText bounds what of a remote's own words an error carries.
const maxRemoteText = 300

// Quantity writes a number of bytes as Kubernetes writes quantities
// (16Mi), as the limit flags take them.
func Quantity(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}

// limitedReader fails a read once more than max bytes came through.
type limitedReader struct {
	r    io.Reader
	n    int64
	max  int64
	what string
}

func (l *limitedReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > l.max {
		return n, &LimitError{What: l.what, Limit: "git-max-fetch-size", Value: l.max}
	}
	return n, err
}

// limitedTransport bounds each HTTP response body an exchange with the
// remote reads (the refs advertised, a pack).
type limitedTransport struct {
	base http.RoundTripper
	max  int64
	what string
}

// RoundTrip implements http.RoundTripper.
func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, r: &limitedReader{r: resp.Body, max: t.max, what: t.what}}
	return resp, nil
}

type limitedBody struct {
	io.ReadCloser
	r *limitedReader
}

func (b *limitedBody) Read(p []byte) (int, error) { return b.r.Read(p) }
