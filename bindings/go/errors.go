package prepack

import "fmt"

// Code is a status code of prepack.h: the google.rpc.Code (gRPC) numbers.
type Code int

const (
	OK                 Code = 0
	Cancelled          Code = 1
	Unknown            Code = 2
	InvalidArgument    Code = 3
	DeadlineExceeded   Code = 4
	NotFound           Code = 5
	ResourceExhausted  Code = 8
	FailedPrecondition Code = 9
	OutOfRange         Code = 11
	Unimplemented      Code = 12
	Internal           Code = 13
	Unavailable        Code = 14
	DataLoss           Code = 15
)

var codeNames = map[Code]string{
	OK: "OK", Cancelled: "CANCELLED", Unknown: "UNKNOWN", InvalidArgument: "INVALID_ARGUMENT",
	DeadlineExceeded: "DEADLINE_EXCEEDED", NotFound: "NOT_FOUND", ResourceExhausted: "RESOURCE_EXHAUSTED",
	FailedPrecondition: "FAILED_PRECONDITION", OutOfRange: "OUT_OF_RANGE", Unimplemented: "UNIMPLEMENTED",
	Internal: "INTERNAL", Unavailable: "UNAVAILABLE", DataLoss: "DATA_LOSS",
}

func (c Code) String() string {
	if name, ok := codeNames[c]; ok {
		return name
	}
	return fmt.Sprintf("Code(%d)", int(c))
}

// Error is a failed call or request: the library's status code and message.
type Error struct {
	Code    Code
	Message string
	cause   error // the context's error when a context cancelled the request
}

func (e *Error) Error() string { return e.Code.String() + ": " + e.Message }

// Unwrap gives context.Canceled or context.DeadlineExceeded when the
// request's context ended it, so errors.Is works on either.
func (e *Error) Unwrap() error { return e.cause }

// CodeOf returns err's Code: OK for nil, Unknown for errors not from prepack.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	if e, ok := err.(*Error); ok {
		return e.Code
	}
	return Unknown
}

func errorf(code Code, format string, args ...interface{}) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
