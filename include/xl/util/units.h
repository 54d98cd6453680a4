// Byte counts in the units xl's records and messages use.
#pragma once

namespace xl {

/// Bytes in a mebibyte, for the *_mib fields of records and messages.
inline constexpr double kMiB = 1024.0 * 1024.0;

} // namespace xl
