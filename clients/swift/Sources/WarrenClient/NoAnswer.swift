/// An answer with nothing to read (204).
struct NoAnswer: Decodable {}
