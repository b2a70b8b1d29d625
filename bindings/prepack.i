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
// A std::string as a Java byte[] of the same bytes, which the proxy decodes
// as UTF-8 (see the string typemaps below). NULL with an error pending.
static jbyteArray PrepackJavaBytes(JNIEnv* env, const std::string& s) {
    if (s.size() > 0x7fffffff) {   // a Java array holds at most 2^31 - 1 bytes
        SWIG_JavaThrowException(env, SWIG_JavaOutOfMemoryError, "string too long for Java");
        return nullptr;
    }
    const jsize n = static_cast<jsize>(s.size());
    jbyteArray out = env->NewByteArray(n);   // NULL: OutOfMemoryError pending
    if (out != nullptr) env->SetByteArrayRegion(out, 0, n, reinterpret_cast<const jbyte*>(s.data()));
    return out;
}

// The bytes of a Java byte[] (String.getBytes(UTF_8)) as a std::string.
// False with NullPointerException pending for null.
static bool PrepackJavaString(JNIEnv* env, jbyteArray in, std::string* out) {
    if (in == nullptr) {
        SWIG_JavaThrowException(env, SWIG_JavaNullPointerException, "null string");
        return false;
    }
    out->resize(static_cast<size_t>(env->GetArrayLength(in)));
    env->GetByteArrayRegion(in, 0, static_cast<jsize>(out->size()), reinterpret_cast<jbyte*>(&(*out)[0]));
    return true;
}

// Raises dev.prepack.PrepackException(int status, byte[] utf8Message) in the
// calling Java thread; the JNI function then returns at once. The message
// goes as bytes for the reason the string typemaps do: it may quote the
// caller's text (a lazy schedule), emoji included.
static void PrepackThrowJava(JNIEnv* env, int code, const char* message) {
    jclass cls = env->FindClass("dev/prepack/PrepackException");
    if (cls == nullptr) return;   // NoClassDefFoundError is pending instead
    jmethodID  ctor = env->GetMethodID(cls, "<init>", "(I[B)V");
    jbyteArray text = PrepackJavaBytes(env, message);
    if (ctor != nullptr && text != nullptr) {
        jobject ex = env->NewObject(cls, ctor, static_cast<jint>(code), text);
        if (ex != nullptr) env->Throw(static_cast<jthrowable>(ex));
    }
    env->DeleteLocalRef(cls);
}
%}

/* Strings cross JNI as real UTF-8: byte[] on the native side, Java's own
** codec (String.getBytes / new String, UTF_8) on the Java side. SWIG's
** std::string typemaps use GetStringUTFChars/NewStringUTF, which speak JNI's
** *modified* UTF-8: a character outside the BMP (emoji) goes in as two
** 3-byte surrogates, which the library rejects as "not valid UTF-8", and a
** 4-byte sequence coming out is not valid modified UTF-8 at all (an embedded
** NUL is C0 80, too). These cover every std::string the layer has: prompts,
** stop strings (StringVector's elements), tokenize/detokenize, token and
** result text and thinking, messages, the model and chat template paths,
** every field of a conversation (roles, contents, text parts, names,
** tool JSON, rendered chat prompts), grammars and tool calls (ids, names,
** arguments). Invalid UTF-8 coming out becomes
** U+FFFD, never a JNI error; the layer only hands out whole UTF-8. */
%typemap(jni)     std::string, const std::string& "jbyteArray"
%typemap(jtype)   std::string, const std::string& "byte[]"
%typemap(jstype)  std::string, const std::string& "String"
%typemap(javain)  std::string, const std::string& "$javainput.getBytes(java.nio.charset.StandardCharsets.UTF_8)"
%typemap(javaout) std::string, const std::string& {
    return new String($jnicall, java.nio.charset.StandardCharsets.UTF_8);
  }
%typemap(in) std::string %{ if (!PrepackJavaString(jenv, $input, &$1)) return $null; %}
%typemap(in) const std::string& (std::string bytes)
%{ if (!PrepackJavaString(jenv, $input, &bytes)) return $null;
   $1 = &bytes; %}
%typemap(out) std::string %{ $result = PrepackJavaBytes(jenv, $1); %}
%typemap(out) const std::string& %{ $result = PrepackJavaBytes(jenv, *$1); %}
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
typedef void (SWIGSTDCALL* PrepackCSharpThrow)(int, const char*, int);
static PrepackCSharpThrow prepack_csharp_throw = nullptr;

extern "C" SWIGEXPORT void SWIGSTDCALL PrepackRegisterExceptionCallback(PrepackCSharpThrow callback) {
    prepack_csharp_throw = callback;
}

// Strings leave for C# as (bytes, length), which C# decodes with its own
// UTF-8 codec (see the string typemaps below); it answers a GCHandle of the
// new string, taken back by PrepackTakeString.
typedef void* (SWIGSTDCALL* PrepackCSharpString)(const char*, int);
static PrepackCSharpString prepack_csharp_string = nullptr;

extern "C" SWIGEXPORT void SWIGSTDCALL PrepackRegisterStringCallback(PrepackCSharpString callback) {
    prepack_csharp_string = callback;
}

static void PrepackThrowCSharp(int code, const std::string& message) {
    // At most 2^31 - 1 bytes cross; a message is never near that.
    const int n = message.size() > 0x7fffffff ? 0x7fffffff : static_cast<int>(message.size());
    if (prepack_csharp_throw != nullptr) prepack_csharp_throw(code, message.data(), n);
}

static void* PrepackCSharpStringOf(const std::string& s) {
    if (s.size() > 0x7fffffff) {   // a C# string holds less
        SWIG_CSharpSetPendingException(SWIG_CSharpOutOfMemoryException, "string too long for C#");
        return nullptr;
    }
    return prepack_csharp_string(s.data(), static_cast<int>(s.size()));
}
%}
%pragma(csharp) imclasscode=%{
  // Turns the C++ Error into Prepack.PrepackException (see prepack.i).
  protected class PrepackExceptionHelper {
    public delegate void ThrowDelegate(int status, global::System.IntPtr utf8, int length);
    static ThrowDelegate throwDelegate = new ThrowDelegate(SetPending);

    [global::System.Runtime.InteropServices.DllImport("$dllimport", EntryPoint="PrepackRegisterExceptionCallback")]
    public static extern void Register(ThrowDelegate callback);

    static void SetPending(int status, global::System.IntPtr utf8, int length) {
      string message = PrepackStringHelper.Decode(utf8, length);
      SWIGPendingException.Set(new global::Prepack.PrepackException((global::Prepack.StatusCode)status, message));
    }

    static PrepackExceptionHelper() {
      Register(throwDelegate);
    }
  }
  static protected PrepackExceptionHelper prepackExceptionHelper = new PrepackExceptionHelper();

  // Makes the strings C++ hands out (see prepack.i): its bytes decoded by
  // Encoding.UTF8, which turns invalid UTF-8 into U+FFFD where Mono's own
  // marshalling of a char* throws ExecutionEngineException.
  protected class PrepackStringHelper {
    public delegate global::System.IntPtr StringDelegate(global::System.IntPtr utf8, int length);
    static StringDelegate stringDelegate = new StringDelegate(Create);

    [global::System.Runtime.InteropServices.DllImport("$dllimport", EntryPoint="PrepackRegisterStringCallback")]
    public static extern void Register(StringDelegate callback);

    public static string Decode(global::System.IntPtr utf8, int length) {
      byte[] bytes = new byte[length];
      if (length > 0) global::System.Runtime.InteropServices.Marshal.Copy(utf8, bytes, 0, length);
      return global::System.Text.Encoding.UTF8.GetString(bytes);
    }

    static global::System.IntPtr Create(global::System.IntPtr utf8, int length) {
      return global::System.Runtime.InteropServices.GCHandle.ToIntPtr(
          global::System.Runtime.InteropServices.GCHandle.Alloc(Decode(utf8, length)));
    }

    static PrepackStringHelper() {
      Register(stringDelegate);
    }
  }
  static protected PrepackStringHelper prepackStringHelper = new PrepackStringHelper();

  // The string behind a handle from PrepackStringHelper.Create, freeing the
  // handle; null for none (an exception is pending then).
  internal static string PrepackTakeString(global::System.IntPtr handle) {
    if (handle == global::System.IntPtr.Zero) return null;
    global::System.Runtime.InteropServices.GCHandle h = global::System.Runtime.InteropServices.GCHandle.FromIntPtr(handle);
    string s = (string)h.Target;
    h.Free();
    return s;
  }
%}
/* Strings out of C++ (detokenize's text, token and result text, messages,
** StringVector's elements) leave as their bytes and are decoded by C#'s
** Encoding.UTF8: SWIG's std::string typemaps hand Mono a char* to marshal,
** which throws ExecutionEngineException on a partial character (detokenize
** of one byte-fallback id) and stops at an embedded NUL. Strings in keep
** SWIG's marshalling, which encodes C#'s UTF-16 (surrogate pairs included)
** as UTF-8. */
%typemap(ctype, out="void*")                  std::string, const std::string& "const char *"
%typemap(imtype, out="global::System.IntPtr") std::string, const std::string& "string"
%typemap(out) std::string       %{ $result = PrepackCSharpStringOf($1); %}
%typemap(out) const std::string& %{ $result = PrepackCSharpStringOf(*$1); %}
%typemap(csout, excode=SWIGEXCODE) std::string, const std::string& {
    string ret = $imclassname.PrepackTakeString($imcall);$excode
    return ret;
  }
%typemap(csvarout, excode=SWIGEXCODE2) const std::string& %{
    get {
      string ret = $imclassname.PrepackTakeString($imcall);$excode
      return ret;
    } %}
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
%template(ChatMessageVector) std::vector<prepack::binding::ChatMessage>;
%template(ResultVector)  std::vector<prepack::binding::Result>;
%template(ToolCallVector)      std::vector<prepack::binding::ToolCall>;
%template(ToolCallDeltaVector) std::vector<prepack::binding::ToolCallDelta>;
