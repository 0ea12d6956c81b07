// Package lenient lists and watches Scion's kinds so that one object that
// does not decode into its Go type is set aside and reported, instead of
// failing the list (and with it the informer of every object of the kind).
//
// The CRD schemas refuse what the Go types cannot decode; this package is
// the defence behind them, for objects written around validation (an older
// CRD, a direct etcd write, a schema bug). An object set aside is not in the
// cache: the controllers see it as absent and do nothing to it, and the
// Reporter says why on the object itself (Ready=False and Stalled=True with
// reason Undecodable, naming the field), in an event, in the log and in the
// scion_undecodable_objects metric, until it decodes again.
package lenient
