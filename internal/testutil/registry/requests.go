package registry

import (
	"bufio"
	"io"
	"os"
	"regexp"
	"strings"
)

// Kind names a request to a registry by its method and what it reaches:
// "GET tags", "HEAD manifests:v1", "PUT manifests:digest", "POST blobs",
// "GET other /v2/_catalog" ("GET other /v2/" is a ping).
func Kind(method, path string) string {
	if _, rest, ok := strings.Cut(path, "/manifests/"); ok {
		if strings.HasPrefix(rest, "sha256:") {
			return method + " manifests:digest"
		}
		return method + " manifests:" + rest
	}
	if strings.HasSuffix(path, "/tags/list") {
		return method + " tags"
	}
	if strings.Contains(path, "/blobs/") {
		return method + " blobs"
	}
	return method + " other " + path
}

// accessLine is a line of the access log: `... "GET /v2/x/tags/list?n=1000 HTTP/2.0" 200 ...`.
var accessLine = regexp.MustCompile(`"([A-Z]+) (/v2/[^ ?"]*)[^ "]* HTTP/[0-9.]+" ([0-9]{3}) `)

// Requests counts the requests the registry's access log records after
// its first from bytes, by Kind, with each kind's class of tag when
// class is set (class("draft.ws") = "draft.*", say); it returns them and
// where the log ends, for the next count.
func (r *Registry) Requests(from int64, class func(tag string) string) (map[string]int64, int64, error) {
	f, err := os.Open(r.Log)
	if err != nil {
		return nil, from, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, from, err
	}
	out := map[string]int64{}
	rd := bufio.NewReaderSize(f, 1<<16)
	end := from
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			// A line still being written is counted next time.
			break
		}
		end += int64(len(line))
		m := accessLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		k := Kind(m[1], m[2])
		if tag, ok := strings.CutPrefix(k, m[1]+" manifests:"); ok && class != nil && tag != "digest" {
			k = m[1] + " manifests:" + class(tag)
		}
		out[k]++
	}
	return out, end, nil
}
