package manager

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/scion-dev/scion/internal/store"
)

// maxEventNote is the longest note an event is given: events.k8s.io/v1
// refuses a note over 1,024 bytes, and the event is then lost (client-go
// logs "Server rejected event (will not retry!)"). It leaves room for
// store.Shorten's "... (N bytes more)".
const maxEventNote = 1024 - 32

// shortNotes is an event recorder that cuts each event's note to
// maxEventNote bytes, so that an event about a long condition message
// (up to 4 KiB) or a long list of warnings is recorded, shortened, rather
// than refused.
type shortNotes struct {
	recorder.EventRecorder
}

// eventRecorder is the manager's recorder named name, with short notes.
func eventRecorder(mgr recorder.Provider, name string) recorder.EventRecorder {
	return shortNotes{mgr.GetEventRecorder(name)}
}

// Eventf records an event with its note cut to maxEventNote bytes.
func (r shortNotes) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", store.Shorten(fmt.Sprintf(note, args...), maxEventNote))
}

// AnnotatedEventf records an annotated event with its note cut to
// maxEventNote bytes.
func (r shortNotes) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...interface{}) {
	r.EventRecorder.AnnotatedEventf(regarding, related, annotations, eventtype, reason, action, "%s", store.Shorten(fmt.Sprintf(note, args...), maxEventNote))
}
