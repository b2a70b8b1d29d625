namespace Prepack
{
    /// <summary>The status codes of prepack.h: the google.rpc.Code (gRPC) numbers.</summary>
    public enum StatusCode
    {
        Ok = 0,
        Cancelled = 1,
        Unknown = 2,
        InvalidArgument = 3,
        DeadlineExceeded = 4,
        NotFound = 5,
        ResourceExhausted = 8,
        FailedPrecondition = 9,
        OutOfRange = 11,
        Unimplemented = 12,
        Internal = 13,
        Unavailable = 14,
        DataLoss = 15,
    }
}
