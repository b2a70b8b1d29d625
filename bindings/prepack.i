/* prepack.i: the one SWIG interface for the Go, Java and C# bindings.
**
** SWIG wraps prepack_binding.h, a small C++ layer over the C ABI, never
** prepack.h itself: the C functions trade in raw pointers, caller buffers
** and event pointers that die at the next call, and wrapping them directly
** would let every language free or read what C owns. The layer copies all
** strings and arrays into value types and owns each C handle in an object
** with an idempotent Close().
**
** Errors: every fallible call ends in `Status* status`. Java and C# never
** see that parameter (it is NULL, so the call throws Error) and the
** %exception blocks below turn Error into dev.prepack.PrepackException and
** Prepack.PrepackException. Go passes a Status and returns an `error`, so
** bad input never becomes a panic.
**
** The generated code is internal to each language's hand-written layer
** (bindings/java, bindings/csharp, bindings/go), which adds the idioms:
** AutoCloseable/IDisposable, iterators, context cancellation.
*/
%module prepack

%{
#include "prepack_binding.h"
%}

%include <stdint.i>
%include <std_string.i>
%include <std_vector.i>

/* ---- names: snake_case C++ members become each language's style --------- */
#if defined(SWIGJAVA)
%rename("%(lowercamelcase)s", %$isfunction) "";
%rename("%(lowercamelcase)s", %$isvariable) "";
#else
/* Go exports capitalised names; C# methods and properties are PascalCase. */
%rename("%(camelcase)s", %$isfunction) "";
%rename("%(camelcase)s", %$isvariable) "";
#endif

/* ---- what stays out -------------------------------------------------------- */
%ignore prepack::binding::Error;                  /* surfaces as each language's error */
%ignore prepack::binding::Stream::Stream;          /* streams come from Engine::Start */
%ignore prepack::binding::Status::Set;

/* ---- ownership ----------------------------------------------------------- */
/* The caller owns what these return: the proxy deletes it (explicitly in
** the language layers, or when collected). */
%newobject prepack::binding::Engine::Open;
%newobject prepack::binding::Engine::Start;

/* ---- errors -------------------------------------------------------------- */
#if defined(SWIGJAVA) || defined(SWIGCSHARP)
/* No Status argument: the call throws, and %exception converts. */
%typemap(in, numinputs=0) prepack::binding::Status* status "$1 = nullptr;"
%ignore prepack::binding::Status;
#endif

#if defined(SWIGJAVA)
%{
// Raises dev.prepack.PrepackException(int status, String message) in the
// calling Java thread; the JNI function then returns at once.
static void PrepackThrowJava(JNIEnv* env, int code, const char* message) {
    jclass cls = env->FindClass("dev/prepack/PrepackException");
    if (cls == nullptr) return;   // NoClassDefFoundError is pending instead
    jmethodID ctor = env->GetMethodID(cls, "<init>", "(ILjava/lang/String;)V");
    jstring   text = env->NewStringUTF(message);
    if (ctor != nullptr && text != nullptr) {
        jobject ex = env->NewObject(cls, ctor, static_cast<jint>(code), text);
        if (ex != nullptr) env->Throw(static_cast<jthrowable>(ex));
    }
    env->DeleteLocalRef(cls);
}
%}
/* Any use of the native methods loads the library first (from the jar). */
%pragma(java) jniclasscode=%{
  static {
    dev.prepack.NativeLibrary.load();
  }
%}
%exception {
    try {
        $action
    } catch (const prepack::binding::Error& e) {
        PrepackThrowJava(jenv, e.code(), e.what());
        return $null;
    } catch (const std::exception& e) {
        PrepackThrowJava(jenv, PREPACK_INTERNAL, e.what());
        return $null;
    }
}
#endif

#if defined(SWIGCSHARP)
%{
// C# registers a delegate at start-up that stores a Prepack.PrepackException
// as SWIG's pending exception; the generated C# code throws it once the
// P/Invoke call has returned (exceptions must not unwind through native frames).
typedef void (SWIGSTDCALL* PrepackCSharpThrow)(int, const char*);
static PrepackCSharpThrow prepack_csharp_throw = nullptr;

extern "C" SWIGEXPORT void SWIGSTDCALL PrepackRegisterExceptionCallback(PrepackCSharpThrow callback) {
    prepack_csharp_throw = callback;
}

static void PrepackThrowCSharp(int code, const char* message) {
    if (prepack_csharp_throw != nullptr) prepack_csharp_throw(code, message);
}
%}
%pragma(csharp) imclasscode=%{
  // Turns the C++ Error into Prepack.PrepackException (see prepack.i).
  protected class PrepackExceptionHelper {
    public delegate void ThrowDelegate(int status, string message);
    static ThrowDelegate throwDelegate = new ThrowDelegate(SetPending);

    [global::System.Runtime.InteropServices.DllImport("$dllimport", EntryPoint="PrepackRegisterExceptionCallback")]
    public static extern void Register(ThrowDelegate callback);

    static void SetPending(int status, string message) {
      SWIGPendingException.Set(new global::Prepack.PrepackException((global::Prepack.StatusCode)status, message));
    }

    static PrepackExceptionHelper() {
      Register(throwDelegate);
    }
  }
  static protected PrepackExceptionHelper prepackExceptionHelper = new PrepackExceptionHelper();
%}
%exception {
    try {
        $action
    } catch (const prepack::binding::Error& e) {
        PrepackThrowCSharp(e.code(), e.what());
        return $null;
    } catch (const std::exception& e) {
        PrepackThrowCSharp(PREPACK_INTERNAL, e.what());
        return $null;
    }
}
#endif

#if defined(SWIGGO)
/* Go passes a Status to every fallible call, so nothing below throws; this
** is the last line against a C++ exception reaching cgo, which would abort. */
%exception {
    try {
        $action
    } catch (const std::exception& e) {
        _swig_gopanic(e.what());
    }
}
#endif

%include "prepack_binding.h"

/* The renames above are for prepack_binding.h: the containers keep SWIG's own names. */
%rename("%s", %$isfunction) "";
%rename("%s", %$isvariable) "";

/* ---- containers (after the classes they hold) ------------------------------ */
%template(IntVector)     std::vector<int32_t>;
%template(FloatVector)   std::vector<float>;
%template(StringVector)  std::vector<std::string>;
%template(RequestVector) std::vector<prepack::binding::Request>;
%template(ResultVector)  std::vector<prepack::binding::Result>;
