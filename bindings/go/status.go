package prepack

import "prepack.dev/prepack/bindings/internal/native"

// call runs f with a fresh native Status and turns a failure into an
// *Error. Every fallible native call takes one, so that errors come back
// as values: a C++ exception could not cross cgo, and a SWIG panic would.
func call(f func(st native.Status)) error {
	st := native.NewStatus()
	defer native.DeleteStatus(st)
	f(st)
	if st.Ok() {
		return nil
	}
	return &Error{Code: Code(st.Code()), Message: st.Message()}
}
