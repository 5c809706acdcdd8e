// placeholder so the engine library is never empty
namespace btrdedupe {}
