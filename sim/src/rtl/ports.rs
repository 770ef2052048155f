//! Ports of a Verilated model, discovered from the `V<name>.h` header Verilator writes.
//!
//! Verilator declares every top-level port of the model class with one macro per port:
//!
//! ```text
//! VL_IN8(&clk,0,0);          // 1..=8 bits,  stored in a CData (u8)
//! VL_OUT16(&s,15,0);         // 9..=16 bits, SData (u16)
//! VL_IN(&x,31,0);            // 17..=32 bits, IData (u32)
//! VL_OUT64(&y,40,0);         // 33..=64 bits, QData (u64)
//! VL_INW(&big,511,0,16);     // 65.. bits,   VlWide<16>: u32 words, word 0 = bits 31:0
//! VL_INOUT8(&io,3,0);        // inout: readable and writable
//! ```
//!
//! Parsing those lines gives the exact port list (name, direction, width, storage class)
//! without a Verilog parser, and it is the list the generated C++ shim is compiled against.

use std::fmt;

use super::RtlError;

/// Direction of a top-level port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PortDir {
    /// `input`: written by the harness.
    Input,
    /// `output`: read by the harness.
    Output,
    /// `inout`: both (Verilator models it as a plain variable).
    Inout,
}

impl PortDir {
    /// Whether the harness may write this port.
    pub fn is_writable(self) -> bool {
        matches!(self, PortDir::Input | PortDir::Inout)
    }
}

impl fmt::Display for PortDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PortDir::Input => "input",
            PortDir::Output => "output",
            PortDir::Inout => "inout",
        })
    }
}

/// The C++ storage class Verilator uses for a port (decides the shim's code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Storage {
    /// `CData`, 1..=8 bits.
    C8,
    /// `SData`, 9..=16 bits.
    S16,
    /// `IData`, 17..=32 bits.
    I32,
    /// `QData`, 33..=64 bits.
    Q64,
    /// `VlWide<words>`, 65 bits and more.
    Wide,
}

impl Storage {
    pub(crate) fn cxx_type(self) -> &'static str {
        match self {
            Storage::C8 => "CData",
            Storage::S16 => "SData",
            Storage::I32 => "IData",
            Storage::Q64 => "QData",
            Storage::Wide => "WData",
        }
    }
}

/// One top-level port of a Verilated model.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PortInfo {
    /// The port's name as Verilator spells it in C++ (the Verilog name for plain identifiers).
    pub name: String,
    /// Its direction.
    pub dir: PortDir,
    /// Its width in bits. A port declared `[8:1]` is 8 bits wide; values are always given
    /// and returned right-aligned (bit 0 of the value is the declared LSB).
    pub width: u32,
    pub(crate) storage: Storage,
}

impl PortInfo {
    /// Number of 32-bit words of the port's value (`ceil(width / 32)`).
    pub fn words(&self) -> usize {
        self.width.div_ceil(32) as usize
    }

    /// Whether the port fits a `u64` ([`get`](super::VerilatedModel::get) works on it).
    pub fn fits_u64(&self) -> bool {
        self.width <= 64
    }
}

impl fmt::Display for PortInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}:0] {}", self.dir, self.width - 1, self.name)
    }
}

/// Parses the port macros of a Verilator `V<name>.h` header, in declaration order of the header.
pub(crate) fn parse_header(header: &str) -> Result<Vec<PortInfo>, RtlError> {
    let mut ports = Vec::new();
    for line in header.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("VL_") else {
            continue;
        };
        let (dir, rest) = if let Some(r) = rest.strip_prefix("INOUT") {
            (PortDir::Inout, r)
        } else if let Some(r) = rest.strip_prefix("IN") {
            (PortDir::Input, r)
        } else if let Some(r) = rest.strip_prefix("OUT") {
            (PortDir::Output, r)
        } else {
            continue;
        };
        let Some(open) = rest.find('(') else { continue };
        let storage = match &rest[..open] {
            "8" => Storage::C8,
            "16" => Storage::S16,
            "" => Storage::I32,
            "64" => Storage::Q64,
            "W" => Storage::Wide,
            _ => continue, // another VL_IN... macro, not a port declaration
        };
        let bad = |why: &str| RtlError::PortParse {
            line: line.to_string(),
            detail: why.to_string(),
        };
        let args = rest[open + 1..]
            .strip_suffix(");")
            .ok_or_else(|| bad("expected `);` at the end"))?;
        let fields: Vec<&str> = args.split(',').map(str::trim).collect();
        let expected = if storage == Storage::Wide { 4 } else { 3 };
        if fields.len() != expected {
            return Err(bad("unexpected number of macro arguments"));
        }
        let name = fields[0]
            .strip_prefix('&')
            .ok_or_else(|| bad("expected `&name`"))?;
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(bad(
                "unsupported port (unpacked array or unusual name); only packed ports are supported",
            ));
        }
        let msb: u32 = fields[1].parse().map_err(|_| bad("bad msb"))?;
        let lsb: u32 = fields[2].parse().map_err(|_| bad("bad lsb"))?;
        if msb < lsb {
            return Err(bad("msb < lsb"));
        }
        let width = msb - lsb + 1;
        let fits = match storage {
            Storage::C8 => width <= 8,
            Storage::S16 => (9..=16).contains(&width),
            Storage::I32 => (17..=32).contains(&width),
            Storage::Q64 => (33..=64).contains(&width),
            Storage::Wide => width > 64,
        };
        if !fits {
            return Err(bad("width does not match the storage macro"));
        }
        if storage == Storage::Wide {
            let words: usize = fields[3].parse().map_err(|_| bad("bad word count"))?;
            if words != width.div_ceil(32) as usize {
                return Err(bad("word count does not match the width"));
            }
        }
        ports.push(PortInfo {
            name: name.to_string(),
            dir,
            width,
            storage,
        });
    }
    Ok(ports)
}

/// A resolved port of one built model: a cheap handle for hot loops, from
/// [`VerilatedModel::port`](super::VerilatedModel::port) or
/// [`VerilatedLib::port`](super::VerilatedLib::port).
///
/// It is valid for every model instance of the same library; using it on a model of another
/// library is an error ([`RtlError::ForeignPort`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Port {
    pub(crate) lib_id: u64,
    pub(crate) index: u32,
}

/// Something that names a port: a `&str`/`String` (looked up by name) or a [`Port`] handle.
pub trait AsPort {
    /// Finds the port's index in `ports` of the library `lib_id`.
    #[doc(hidden)]
    fn resolve(&self, lib_id: u64, ports: &PortTable) -> Result<usize, RtlError>;
}

impl AsPort for str {
    fn resolve(&self, _lib_id: u64, ports: &PortTable) -> Result<usize, RtlError> {
        ports.index_of(self)
    }
}

impl AsPort for &str {
    fn resolve(&self, lib_id: u64, ports: &PortTable) -> Result<usize, RtlError> {
        (**self).resolve(lib_id, ports)
    }
}

impl AsPort for String {
    fn resolve(&self, lib_id: u64, ports: &PortTable) -> Result<usize, RtlError> {
        self.as_str().resolve(lib_id, ports)
    }
}

impl AsPort for &String {
    fn resolve(&self, lib_id: u64, ports: &PortTable) -> Result<usize, RtlError> {
        self.as_str().resolve(lib_id, ports)
    }
}

impl AsPort for Port {
    fn resolve(&self, lib_id: u64, ports: &PortTable) -> Result<usize, RtlError> {
        if self.lib_id != lib_id || self.index as usize >= ports.ports.len() {
            return Err(RtlError::ForeignPort);
        }
        Ok(self.index as usize)
    }
}

/// The ports of a model with a name index.
#[derive(Debug)]
#[doc(hidden)]
pub struct PortTable {
    pub(crate) model: String,
    pub(crate) ports: Vec<PortInfo>,
    by_name: std::collections::HashMap<String, usize>,
}

impl PortTable {
    pub(crate) fn new(model: String, ports: Vec<PortInfo>) -> Self {
        let by_name = ports
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.clone(), i))
            .collect();
        PortTable {
            model,
            ports,
            by_name,
        }
    }

    pub(crate) fn index_of(&self, name: &str) -> Result<usize, RtlError> {
        self.by_name
            .get(name)
            .copied()
            .ok_or_else(|| RtlError::UnknownPort {
                port: name.to_string(),
                model: self.model.clone(),
                known: self
                    .ports
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_macro_kind() {
        let h = "class Vx {\n  public:\n    VL_IN8(&clk,0,0);\n    VL_INOUT8(&io,3,0);\n    \
                 VL_OUT16(&s16,15,0);\n    VL_INW(&w,71,0,3);\n    VL_OUT(&cnt,31,0);\n    \
                 VL_OUT64(&s41,40,0);\n    VL_IN8(&b,8,1);\n};\n";
        let p = parse_header(h).unwrap();
        let summary: Vec<(String, PortDir, u32, Storage)> = p
            .iter()
            .map(|p| (p.name.clone(), p.dir, p.width, p.storage))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("clk".into(), PortDir::Input, 1, Storage::C8),
                ("io".into(), PortDir::Inout, 4, Storage::C8),
                ("s16".into(), PortDir::Output, 16, Storage::S16),
                ("w".into(), PortDir::Input, 72, Storage::Wide),
                ("cnt".into(), PortDir::Output, 32, Storage::I32),
                ("s41".into(), PortDir::Output, 41, Storage::Q64),
                ("b".into(), PortDir::Input, 8, Storage::C8),
            ]
        );
        assert_eq!(p[3].words(), 3);
        assert!(!p[3].fits_u64());
    }

    #[test]
    fn rejects_inconsistent_declarations() {
        assert!(parse_header("VL_INW(&w,71,0,2);").is_err());
        assert!(parse_header("VL_IN8(&w,15,0);").is_err());
        assert!(parse_header("VL_IN8(&w[4],7,0);").is_err());
        // Not a port macro: ignored.
        assert!(parse_header("VL_INLINE_OPT void f();").unwrap().is_empty());
    }
}
