//! The value encoding of the group records (see the format table in `records.rs`): one
//! [`Field`] implementation per stored type, so that a record's fields are listed once
//! and written and read in the same order.
//!
//! Big-endian integers; `str` / `bytes` = `u32` length + bytes (UTF-8 for `str`);
//! optional values = `u8` flag (0 absent, 1 present) then the value; arrays = `u32`
//! count then the items; uuid = 16 bytes. Reading checks every length and count
//! against the remaining input before allocating, and never panics.

use bytes::Bytes;
use uuid::Uuid;

use super::records::DecodeError;

/// Reads fields from the front of a byte slice.
pub(crate) struct Reader<'a> {
    /// What is left to read.
    pub buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    /// The next `n` bytes; "truncated" if fewer are left.
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.buf.len() {
            return Err(DecodeError("truncated"));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    /// The next `N` bytes as an array.
    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    /// The next field, of any stored type.
    pub fn get<T: Field>(&mut self) -> Result<T, DecodeError> {
        T::get(self)
    }

    /// A `u32` length-prefixed byte string.
    fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = u32::get(self)? as usize;
        self.take(n)
    }
}

/// A type the group records store.
pub(crate) trait Field: Sized {
    /// The fewest bytes one encoded value takes (bounds array allocations when reading).
    const MIN_BYTES: usize;
    /// Append the encoded value to `b`.
    fn put(&self, b: &mut Vec<u8>);
    /// Read one value.
    fn get(r: &mut Reader) -> Result<Self, DecodeError>;
}

/// Big-endian integers.
macro_rules! int_field {
    ($($t:ty),*) => {$(
        impl Field for $t {
            const MIN_BYTES: usize = std::mem::size_of::<$t>();
            fn put(&self, b: &mut Vec<u8>) {
                b.extend_from_slice(&self.to_be_bytes());
            }
            fn get(r: &mut Reader) -> Result<Self, DecodeError> {
                Ok(<$t>::from_be_bytes(r.array()?))
            }
        }
    )*};
}

int_field!(u8, i32, u32, i64);

impl Field for Uuid {
    const MIN_BYTES: usize = 16;
    fn put(&self, b: &mut Vec<u8>) {
        b.extend_from_slice(self.as_bytes());
    }
    fn get(r: &mut Reader) -> Result<Self, DecodeError> {
        Ok(Uuid::from_bytes(r.array()?))
    }
}

impl Field for Bytes {
    const MIN_BYTES: usize = 4;
    fn put(&self, b: &mut Vec<u8>) {
        (self.len() as u32).put(b);
        b.extend_from_slice(self);
    }
    fn get(r: &mut Reader) -> Result<Self, DecodeError> {
        Ok(Bytes::copy_from_slice(r.bytes()?))
    }
}

impl Field for String {
    const MIN_BYTES: usize = 4;
    fn put(&self, b: &mut Vec<u8>) {
        (self.len() as u32).put(b);
        b.extend_from_slice(self.as_bytes());
    }
    fn get(r: &mut Reader) -> Result<Self, DecodeError> {
        std::str::from_utf8(r.bytes()?)
            .map(|s| s.to_string())
            .map_err(|_| DecodeError("string is not UTF-8"))
    }
}

impl<T: Field> Field for Option<T> {
    const MIN_BYTES: usize = 1;
    fn put(&self, b: &mut Vec<u8>) {
        match self {
            Some(v) => {
                b.push(1);
                v.put(b);
            }
            None => b.push(0),
        }
    }
    fn get(r: &mut Reader) -> Result<Self, DecodeError> {
        match u8::get(r)? {
            0 => Ok(None),
            1 => T::get(r).map(Some),
            _ => Err(DecodeError("bad presence flag")),
        }
    }
}

impl<T: Field> Field for Vec<T> {
    const MIN_BYTES: usize = 4;
    fn put(&self, b: &mut Vec<u8>) {
        (self.len() as u32).put(b);
        for v in self {
            v.put(b);
        }
    }
    fn get(r: &mut Reader) -> Result<Self, DecodeError> {
        let n = u32::get(r)? as usize;
        if n.saturating_mul(T::MIN_BYTES.max(1)) > r.buf.len() {
            return Err(DecodeError("count exceeds record size"));
        }
        (0..n).map(|_| T::get(r)).collect()
    }
}

/// Tuples: their items in order.
macro_rules! tuple_field {
    ($($idx:tt $name:ident),*) => {
        impl<$($name: Field),*> Field for ($($name,)*) {
            const MIN_BYTES: usize = 0 $(+ $name::MIN_BYTES)*;
            fn put(&self, b: &mut Vec<u8>) {
                $(self.$idx.put(b);)*
            }
            fn get(r: &mut Reader) -> Result<Self, DecodeError> {
                Ok(($($name::get(r)?,)*))
            }
        }
    };
}

tuple_field!(0 A, 1 B);
tuple_field!(0 A, 1 B, 2 C);

/// Declares a stored struct: its fields, listed once, are its encoding in order.
macro_rules! stored_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty, )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $crate::coordinator::codec::Field for $name {
            const MIN_BYTES: usize =
                0 $(+ <$ty as $crate::coordinator::codec::Field>::MIN_BYTES)*;
            fn put(&self, b: &mut Vec<u8>) {
                $( self.$field.put(b); )*
            }
            fn get(
                r: &mut $crate::coordinator::codec::Reader,
            ) -> Result<Self, DecodeError> {
                Ok($name { $( $field: r.get()?, )* })
            }
        }
    };
}

/// Append each value to the buffer `$b`, in order.
macro_rules! put {
    ($b:expr; $($x:expr),* $(,)?) => {
        { $( $x.put($b); )* }
    };
}

pub(crate) use {put, stored_struct};
