// Word counting.
function countWords(text) {
  return text.split(' ').length;
}
module.exports = { countWords };
